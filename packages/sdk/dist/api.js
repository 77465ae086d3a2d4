// The wire types of the HTTP API (docs/api.md), shared by the server, the
// engine's service layer, the SDK client and the embedded client. Times are
// RFC 3339 strings here; the engine works in epoch milliseconds internally.
export const JOB_STATES = ["SCHEDULED", "PAUSED", "CANCELLED", "COMPLETED", "DEAD"];
//# sourceMappingURL=api.js.map