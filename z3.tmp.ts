import { openApiDocument } from './src/api/openapi/router';
import { Validator } from '@seriousme/openapi-schema-validator';
(async () => {
  const t = performance.now();
  const doc = openApiDocument();
  console.log('build ms', (performance.now() - t).toFixed(1), 'bytes', JSON.stringify(doc).length);
  const v = new Validator();
  const r = await v.validate(doc as never);
  console.log(JSON.stringify(r, null, 1).slice(0, 3000));
  console.log(Object.keys(doc.paths), Object.keys((doc as any).components.schemas));
})();
