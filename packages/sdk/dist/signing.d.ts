export declare const SIGNATURE_VERSION = "v1";
/** The Duetime-Signature value for a body signed at `timestamp` (unix seconds) with each secret. */
export declare function signatureHeader(secrets: readonly string[], timestamp: string, body: string | Uint8Array): string;
export interface VerifyOptions {
    /** The receiver's secret; several during a rotation (any one may match). */
    secret: string | readonly string[];
    /** The request's headers (node's IncomingHttpHeaders, a fetch Headers, or any name → value map). */
    headers: Record<string, string | string[] | undefined> | {
        get(name: string): string | null;
    };
    /** The raw body exactly as received (not re-serialised JSON). */
    body: string | Uint8Array;
    /** Calls whose Duetime-Timestamp is further than this from now are rejected (default 300). */
    toleranceSeconds?: number;
    /** Now, in epoch milliseconds (default Date.now(); tests pass their clock). */
    now?: number;
}
/**
 * True when the call is signed by one of the secrets and its timestamp is
 * within the tolerance: `if (!verifySignature({ secret, headers: req.headers, body })) reject()`.
 */
export declare function verifySignature(options: VerifyOptions): boolean;
/** Secrets by tenant, resolved once: each tenant's own list (newest first). */
export declare class SigningKeys {
    private readonly byTenant;
    constructor(secrets?: Record<string, string | readonly string[]>);
    /**
     * The tenant's secrets. A tenant without its own secret gets none and its
     * calls go unsigned: sharing another tenant's secret would let that tenant
     * forge calls to this tenant's receivers.
     */
    forTenant(tenantId: string): readonly string[];
}
