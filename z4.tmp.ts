import { openApiDocument } from './src/api/openapi/router';
const doc = openApiDocument() as any;
console.log(JSON.stringify(doc.paths['/external/api/inference/openai/v1/chat/completions'].post.responses['200'], null, 1).slice(0, 1500));
console.log(JSON.stringify(doc.paths['/admin/projections/{name}/rebuild'], null, 1).slice(0, 2500));
console.log(JSON.stringify(doc.paths['/metrics'], null, 1).slice(0, 800));
console.log(JSON.stringify(doc.components.schemas.StripeEvent, null, 1));
