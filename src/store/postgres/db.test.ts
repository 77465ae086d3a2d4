// statementAgain: which failures run a statement again (pure; no database).

import assert from "node:assert/strict";
import { test } from "node:test";
import { statementAgain } from "./db.js";

const failing = (errors: object[]) => {
  let calls = 0;
  return {
    run: async () => {
      const error = errors[calls++];
      if (error) throw Object.assign(new Error("failed"), error);
      return calls;
    },
    calls: () => calls,
  };
};

test("a lease's recheck fault, a deadlock and a serialization failure run the statement again, up to three times in all", async () => {
  const recheck = { code: "XX000", message: "ModifyTable should not be called during EvalPlanQual" };
  for (const error of [recheck, { code: "40P01" }, { code: "40001" }]) {
    const s = failing([error, error]);
    assert.equal(await statementAgain(s.run), 3, JSON.stringify(error));
  }
  const always = failing([recheck, recheck, recheck, recheck]);
  await assert.rejects(statementAgain(always.run), /during EvalPlanQual/);
  assert.equal(always.calls(), 3);
});

test("any other failure, another internal error included, is thrown at once", async () => {
  for (const error of [{ code: "XX000", message: "could not read block" }, { code: "23505" }, {}]) {
    const s = failing([error]);
    await assert.rejects(statementAgain(s.run));
    assert.equal(s.calls(), 1, JSON.stringify(error));
  }
});
