// The error catalog: every code the API can answer, its HTTP status and what
// a user should do about it. docs/errors.md is checked against this table by
// a test, so the two cannot drift apart.
export const ERROR_CODES = {
    INVALID_ARGUMENT: { status: 400, hint: "Fix the field named in details.field and send the request again." },
    UNAUTHENTICATED: { status: 401, hint: "Send Authorization: Bearer <key> with a valid API key." },
    PERMISSION_DENIED: { status: 403, hint: "Use a key whose role allows this call." },
    NOT_FOUND: { status: 404, hint: "Check the id; ids of other tenants are not visible." },
    IDEMPOTENCY_MISMATCH: { status: 409, hint: "Use a new Idempotency-Key for a different request body." },
    LEASE_LOST: { status: 409, hint: "The attempt's lease expired or was superseded; stop working on it." },
    INVALID_STATE: { status: 409, hint: "The resource's state does not allow this action; GET it to see its state." },
    VERSION_CONFLICT: { status: 409, hint: "Someone changed the resource; GET it and retry with the new version." },
    PAYLOAD_TOO_LARGE: { status: 413, hint: "Send a smaller body, or raise the server's body limit." },
    RESOURCE_EXHAUSTED: { status: 429, hint: "Slow down and retry after the Retry-After header." },
    INTERNAL: { status: 500, hint: "A bug in duetime; the server log has the details." },
    // Before UNAVAILABLE: a client that maps a bare 503 back to a code (sdk/http.ts) keeps UNAVAILABLE.
    STORE_UNAVAILABLE: {
        status: 503,
        hint: "The store cannot write for now (disk full, I/O error, locked, read-only); retry after the Retry-After header and tell the operator.",
    },
    UNAVAILABLE: { status: 503, hint: "The store is unreachable; retry after the Retry-After header." },
};
export function isErrorCode(value) {
    return typeof value === "string" && Object.hasOwn(ERROR_CODES, value);
}
//# sourceMappingURL=error-codes.js.map