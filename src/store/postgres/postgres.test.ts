// Runs the store conformance suite (test/store-contract/) against the
// PostgreSQL driver, each test in a fresh schema of the test database
// (test-support.ts); a pair is two stores, two pools, on one schema.

import { storeContract } from "../../../test/store-contract/index.js";
import { openPostgresStore } from "./index.js";
import { freshPostgresSchema, postgresAvailable } from "./test-support.js";

/** Small pools: the suite's tests run one at a time, and the server's connections are shared. */
const open = (db: { url: string; schema: string }) => openPostgresStore({ ...db, poolSize: 4 });

if (await postgresAvailable("store contract: postgres")) {
  storeContract(
    "postgres",
    () => open(freshPostgresSchema()),
    async () => {
      const db = freshPostgresSchema();
      const first = await open(db);
      return [first, await open(db)];
    },
  );
}
