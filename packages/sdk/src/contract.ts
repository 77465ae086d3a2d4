// The wire contract the SDK shares with the server: the API's types, the
// operation table, the error catalog, the callback signature scheme and the
// "did you mean" rule for names. `@duetime/sdk/contract` loads none of the client or worker;
// the server, the engine and the CLI import these from here, so each is
// written once (the default worker and node id, and the batcher too).

export * from "./api.js";
export * from "./operations.js";
export * from "./error-codes.js";
export * from "./signing.js";
export { closest } from "./options.js";
export { instanceId } from "./instance-id.js";
export { Batcher, type BatcherOptions, type SendFailure } from "./batcher.js";
