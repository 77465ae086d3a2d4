// Callback signatures (docs/api.md, "HTTP targets"):
//   Duetime-Timestamp: <unix seconds>
//   Duetime-Signature: v1=<hex HMAC-SHA256(secret, timestamp + "." + raw body)>[,v1=...]
// One v1 value per secret of the tenant: during a rotation the new and the old
// secret both sign, so a receiver that knows either accepts the call.
//
// This module depends on node:crypto only, so that the receiver-side
// verifySignature can move to core/ and be exported from the SDK unchanged.
import { createHmac, timingSafeEqual } from "node:crypto";
export const SIGNATURE_VERSION = "v1";
/** The Duetime-Signature value for a body signed at `timestamp` (unix seconds) with each secret. */
export function signatureHeader(secrets, timestamp, body) {
    return secrets.map((secret) => `${SIGNATURE_VERSION}=${hmac(secret, timestamp, body)}`).join(",");
}
function hmac(secret, timestamp, body) {
    return createHmac("sha256", secret).update(`${timestamp}.`).update(body).digest("hex");
}
/**
 * True when the call is signed by one of the secrets and its timestamp is
 * within the tolerance: `if (!verifySignature({ secret, headers: req.headers, body })) reject()`.
 */
export function verifySignature(options) {
    const timestamp = header(options.headers, "duetime-timestamp");
    const signature = header(options.headers, "duetime-signature");
    if (!timestamp || !signature || !/^\d+$/.test(timestamp))
        return false;
    const now = options.now ?? Date.now();
    if (Math.abs(now / 1000 - Number(timestamp)) > (options.toleranceSeconds ?? 300))
        return false;
    const secrets = typeof options.secret === "string" ? [options.secret] : options.secret;
    const offered = signature
        .split(",")
        .map((v) => v.trim())
        .filter((v) => v.startsWith(`${SIGNATURE_VERSION}=`))
        .map((v) => Buffer.from(v.slice(SIGNATURE_VERSION.length + 1), "hex"));
    for (const secret of secrets) {
        const expected = Buffer.from(hmac(secret, timestamp, options.body), "hex");
        if (offered.some((o) => o.length === expected.length && timingSafeEqual(o, expected)))
            return true;
    }
    return false;
}
function header(headers, name) {
    if (typeof headers.get === "function")
        return headers.get(name) ?? undefined;
    const map = headers;
    const key = Object.keys(map).find((k) => k.toLowerCase() === name);
    const value = key === undefined ? undefined : map[key];
    return Array.isArray(value) ? value.join(",") : value;
}
/** Secrets by tenant, resolved once: each tenant's own list (newest first). */
export class SigningKeys {
    byTenant;
    constructor(secrets = {}) {
        const map = new Map();
        for (const [tenant, value] of Object.entries(secrets)) {
            const list = (typeof value === "string" ? [value] : value).filter((s) => s.length > 0);
            if (list.length > 0)
                map.set(tenant, list);
        }
        this.byTenant = map;
    }
    /**
     * The tenant's secrets. A tenant without its own secret gets none and its
     * calls go unsigned: sharing another tenant's secret would let that tenant
     * forge calls to this tenant's receivers.
     */
    forTenant(tenantId) {
        return this.byTenant.get(tenantId) ?? [];
    }
}
//# sourceMappingURL=signing.js.map