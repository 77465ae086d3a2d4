// mayRunAgain: which failures run a transaction again (pure; no database).

import assert from "node:assert/strict";
import { test } from "node:test";
import { mayRunAgain } from "./db.js";

const fault = (error: object) => Object.assign(new Error("failed"), error);

test("a lease's recheck fault, a deadlock and a serialization failure run the transaction again", () => {
  const recheck = { code: "XX000", message: "ModifyTable should not be called during EvalPlanQual" };
  for (const error of [recheck, { code: "40P01" }, { code: "40001" }]) assert.equal(mayRunAgain(fault(error)), true, JSON.stringify(error));
});

test("any other failure, another internal error included, does not", () => {
  for (const error of [{ code: "XX000", message: "could not read block" }, { code: "23505" }, {}]) {
    assert.equal(mayRunAgain(fault(error)), false, JSON.stringify(error));
  }
});
