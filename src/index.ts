// The package entry: the SDK (client, worker, wire types) and embedded mode.
// `duetime/sdk` is the SDK alone, without the engine or any database driver.
export * from "./sdk/index.js";
export { createDuetime, embeddedClient, type Duetime, type DuetimeOptions } from "./embedded/index.js";
export { startServer, type ServerOptions, type RunningServer } from "./server/index.js";
