// Names a store is opened with, checked in one place: the CLI turns a bad one
// into a usage error before anything starts, and a driver refuses it too.

import { invalidArgument } from "../core/errors.js";

/** A PostgreSQL schema duetime installs into: an unquoted identifier, lower case (so no quoting rules reach the SQL). */
export const SCHEMA_NAME = /^[a-z_][a-z0-9_]{0,62}$/;

export const SCHEMA_NAME_RULE = "1 to 63 lower-case letters, digits or _, not starting with a digit";

/** Throws InvalidArgument (field schema) unless name is a SCHEMA_NAME. */
export function checkSchemaName(name: string): string {
  if (!SCHEMA_NAME.test(name)) throw invalidArgument("schema", `expected ${SCHEMA_NAME_RULE}, got ${JSON.stringify(name)}`);
  return name;
}

/** A store URL with its password hidden, for messages and logs. */
export function redactStoreUrl(url: string): string {
  return url.replace(/\/\/([^@/:]*)(:[^@/]*)?@/, (_m, user: string, pass: string | undefined) => `//${user}${pass ? ":***" : ""}@`);
}
