// The Prefer header (RFC 7240) as the creates read it: the first `return`
// preference counts, names compare case-insensitively, values exactly, and
// whatever cannot be parsed is ignored, never thrown.

import assert from "node:assert/strict";
import { test } from "node:test";
import { prefersMinimal, returnPreference } from "./prefer.js";

test("Prefer: return=minimal is read in the forms RFC 7240 allows", () => {
  for (const header of [
    "return=minimal",
    "Return=minimal",
    "RETURN = minimal",
    'return="minimal"',
    "return=minimal; foo=bar",
    'return=minimal;foo="a,b"',
    "respond-async, return=minimal",
    "wait=10,return=minimal",
    " \treturn=minimal\t ",
    ["respond-async", "return=minimal"],
    'x=",return=representation", return=minimal',
    "garbage;;==, return=minimal",
  ]) {
    assert.equal(prefersMinimal(header), true, JSON.stringify(header));
  }
});

test("Prefer: anything but a first return=minimal is not the minimal answer, and nothing throws", () => {
  const cases: [unknown, string | undefined][] = [
    [undefined, undefined],
    ["", undefined],
    [42, undefined],
    [["return=representation"], "representation"],
    ["return=representation", "representation"],
    ["return=representation, return=minimal", "representation"],
    ["return=MINIMAL", "MINIMAL"],
    ["return", ""],
    ["return=", undefined],
    ["return=minimal-ish", "minimal-ish"],
    ['return="minimal', undefined],
    ['return="mini\\"mal"', 'mini"mal'],
    ["return=mini mal", undefined],
    ['x=",return=minimal"', undefined],
    ['x="unterminated, return=minimal', undefined],
    ["respond-async", undefined],
    [";;;,,,===", undefined],
    ["\u0000return=minimal", undefined],
    ["return=minimal\\", undefined],
    ["é=1, return=minimal", "minimal"],
    [`${"a".repeat(100_000)}=${'"'.repeat(3)}`, undefined],
  ];
  for (const [header, expected] of cases) {
    assert.equal(returnPreference(header), expected, String(JSON.stringify(header)).slice(0, 80));
  }
  for (const header of ["return=MINIMAL", "return", "return=representation, return=minimal", 'x=",return=minimal"']) {
    assert.equal(prefersMinimal(header), false, header);
  }
});
