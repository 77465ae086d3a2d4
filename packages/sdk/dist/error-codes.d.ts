export declare const ERROR_CODES: {
    readonly INVALID_ARGUMENT: {
        readonly status: 400;
        readonly hint: "Fix the field named in details.field and send the request again.";
    };
    readonly UNAUTHENTICATED: {
        readonly status: 401;
        readonly hint: "Send Authorization: Bearer <key> with a valid API key.";
    };
    readonly PERMISSION_DENIED: {
        readonly status: 403;
        readonly hint: "Use a key whose role allows this call.";
    };
    readonly NOT_FOUND: {
        readonly status: 404;
        readonly hint: "Check the id; ids of other tenants are not visible.";
    };
    readonly IDEMPOTENCY_MISMATCH: {
        readonly status: 409;
        readonly hint: "Use a new Idempotency-Key for a different request body.";
    };
    readonly LEASE_LOST: {
        readonly status: 409;
        readonly hint: "The attempt's lease expired or was superseded; stop working on it.";
    };
    readonly INVALID_STATE: {
        readonly status: 409;
        readonly hint: "The resource's state does not allow this action; GET it to see its state.";
    };
    readonly VERSION_CONFLICT: {
        readonly status: 409;
        readonly hint: "Someone changed the resource; GET it and retry with the new version.";
    };
    readonly PAYLOAD_TOO_LARGE: {
        readonly status: 413;
        readonly hint: "Send a smaller body, or raise the server's body limit.";
    };
    readonly RESOURCE_EXHAUSTED: {
        readonly status: 429;
        readonly hint: "Slow down and retry after the Retry-After header.";
    };
    readonly INTERNAL: {
        readonly status: 500;
        readonly hint: "A bug in duetime; the server log has the details.";
    };
    readonly STORE_UNAVAILABLE: {
        readonly status: 503;
        readonly hint: "The store cannot write for now (disk full, I/O error, locked, read-only); retry after the Retry-After header and tell the operator.";
    };
    readonly UNAVAILABLE: {
        readonly status: 503;
        readonly hint: "The store is unreachable; retry after the Retry-After header.";
    };
};
export type ErrorCode = keyof typeof ERROR_CODES;
export interface ErrorDetails {
    field?: string;
    [key: string]: unknown;
}
export declare function isErrorCode(value: unknown): value is ErrorCode;
