// Regressions: inputs that once broke the server, run first in every fuzz
// run (fast-check `examples`), so a fixed bug stays fixed whatever the seed.
// Add a case here when the fuzz finds a new kind of failure.

import type { HttpCase } from "./cases.js";
import { malformedLine, rawOf, type RawCase } from "./raw.js";
import { KEYS } from "./server.js";

const AUTH: [string, string] = ["authorization", `Bearer ${KEYS.admin}`];

function get(route: string, path: HttpCase["path"], query: string): HttpCase {
  return { kind: "http", route: `GET ${route}`, method: "GET", path, query, headers: [AUTH] };
}

function post(route: string, json: string): HttpCase {
  return {
    kind: "http",
    route: `POST ${route}`,
    method: "POST",
    path: [route],
    query: "",
    headers: [AUTH, ["content-type", "application/json"]],
    body: { text: json, encoding: "utf8" },
  };
}

export const CORPUS: ReadonlyArray<HttpCase | RawCase> = [
  // count=Infinity passed validation and the preview loop never ended (the server wedged, its RSS grew past 512 MiB).
  get("/v1/schedules/preview", ["/v1/schedules/preview"], "cron=0%209%20*%20*%20*&count=Infinity"),
  // limit=1e309 (Infinity) reached SQLite: 500 "datatype mismatch".
  get("/v1/jobs", ["/v1/jobs"], "limit=1e309"),
  // A window starting in year 0 of a daily cron job: no answer within 2 s.
  get(
    "/v1/jobs/{jobId}/occurrences",
    ["/v1/jobs/", { ref: "jobId", index: 1 }, "/occurrences"],
    "from=0000-01-01T00%3A00%3A00Z&to=2181-07-05T18%3A57%3A54.611Z",
  ),
  // 1,000 Feb 29ths from 1969 in a zone with daylight saving: 4,000 years of zone tables, seconds of CPU (no answer within 2 s).
  get("/v1/schedules/preview", ["/v1/schedules/preview"], "cron=0%200%2029%202%20*&tz=Europe%2FLondon&from=1969-12-31T23%3A59%3A59.990Z&count=1000"),
  // A fractional jitter of under a millisecond: 500 "hashOffset: modulo must be a positive integer".
  post("/v1/jobs", '{"name":"j","target":{"type":"queue","pool":"p"},"schedule":{"cron":"0 9 * * *","jitterSeconds":0.0015}}'),
  // On PostgreSQL: fractional seconds became fractional epoch ms (500 "invalid input syntax for type bigint"),
  // and a NUL in a payload string or a lone surrogate reached jsonb (500), where SQLite kept them.
  post(
    "/v1/jobs",
    '{"name":"j","target":{"type":"queue","pool":"p"},"timeoutSeconds":56.36242882166914,"schedule":{"delaySeconds":1.0000000000000033}}',
  ),
  post("/v1/jobs", '{"name":"j","target":{"type":"queue","pool":"p"},"payload":{"a":"x\\u0000y","\\ud800":1},"schedule":{"delaySeconds":0}}'),
  // node's own 400 (no Host) and 417 (unknown Expect) went out with empty bodies; CONNECT got the socket closed.
  rawOf("no Host"),
  rawOf("garbage Expect"),
  malformedLine("CONNECT 127.0.0.1:1 HTTP/1.1"),
];
