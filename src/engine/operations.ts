// How the engine serves an operation of the table (@duetime/sdk/contract's
// OPERATIONS), for both callers: the HTTP server's routes and the embedded
// client. Each request part is checked against its schema (core/schemas.ts)
// before anything runs, then the operation's decode gives the service
// method of the same name its arguments. Permissions and semantics are the
// service's.

import { ALL_TENANTS, operationNamed, type AnyOperation, type CheckedRequest, type OperationName, type WireRequest } from "@duetime/sdk/contract";
import { DuetimeError } from "../core/errors.js";
import { validate } from "../core/validate.js";
import type { RequestContext, Service } from "./service.js";

/** The request's parts, checked (and coerced: query numbers) by the operation's schemas; throws 400/404 naming the field. */
export function checkRequest(op: AnyOperation, request: WireRequest): CheckedRequest {
  // A malformed jobId or executionId is NOT_FOUND (validate.ts), a bad pool name INVALID_ARGUMENT.
  const params = op.params ? validate<Record<string, string>>(op.params, request.params ?? {}, "params") : {};
  const headers = op.headers ? validate<Record<string, unknown>>(op.headers, request.headers ?? {}, "headers") : (request.headers ?? {});
  const query = validate<Record<string, unknown>>(op.query ?? "noQuery", request.query ?? {}, "query");
  let body = request.body;
  const bodySchema = op.bodyEnvelope ?? op.body;
  if (bodySchema && !(body === undefined && op.bodyOptional)) body = validate(bodySchema, body, "body");
  return { params, headers, query, body };
}

/** Calls the service method named `name` with the checked request's arguments. */
export async function callService(service: Service, name: OperationName, ctx: RequestContext, request: CheckedRequest): Promise<unknown> {
  const op = operationNamed(name);
  if (ctx.tenantId === ALL_TENANTS && !op.acrossTenants) {
    throw new DuetimeError(
      "PERMISSION_DENIED",
      `${op.method} ${op.path} acts for one tenant: a key for every tenant (*) leases, acknowledges and reads stats and cluster views; use a tenant's key`,
    );
  }
  const args = op.decode(request);
  const method = service[name] as (ctx: RequestContext, ...args: unknown[]) => Promise<unknown>;
  return method.call(service, ctx, ...args);
}
