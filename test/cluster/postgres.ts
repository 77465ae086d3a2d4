// What the cluster tests do to PostgreSQL beside the store under test, on the
// test process's own connections (src/store/postgres/test-support.ts). A
// test's nodes connect under an application_name of their schema's name, so
// a test cuts its own nodes' connections and no one else's.

import { adminPool } from "../../src/store/postgres/test-support.js";

/** pg_terminate_backend of every connection under this application_name; answers how many ended. */
export async function terminateConnections(applicationName: string): Promise<number> {
  const { rows } = await adminPool().query<{ terminated: boolean }>(
    "SELECT pg_terminate_backend(pid) AS terminated FROM pg_stat_activity WHERE application_name = $1 AND pid <> pg_backend_pid()",
    [applicationName],
  );
  return rows.filter((r) => r.terminated).length;
}

/** The database's clock, epoch ms. */
export async function databaseNow(): Promise<number> {
  const { rows } = await adminPool().query<{ now: Date }>("SELECT clock_timestamp() AS now");
  return rows[0]!.now.getTime();
}
