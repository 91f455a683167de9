/** The policy use cases: they throw DomainError and know nothing of HTTP. */
export { acceptPolicy } from './accept-policy';
