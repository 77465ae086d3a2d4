export * from "./api.js";
export * from "./error-codes.js";
export * from "./signing.js";
export { closest } from "./options.js";
export { instanceId } from "./instance-id.js";
