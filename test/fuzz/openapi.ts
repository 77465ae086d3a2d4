// The routes to fuzz, read from the server's own /openapi.json. That document
// is generated from the route table (src/server/routes.ts) and its schemas
// (src/core/schemas.ts), so a new route or field is fuzzed without touching
// the fuzz.

export type Schema = { readonly [keyword: string]: unknown };

export interface Param {
  name: string;
  schema: Schema;
  required: boolean;
}

export interface Route {
  method: string;
  /** OpenAPI path, e.g. "/v1/jobs/{jobId}:pause". */
  path: string;
  pathParams: Param[];
  query: Param[];
  headers: Param[];
  /** The JSON body schema, when the route takes one. */
  body?: Schema;
  bodyRequired: boolean;
}

interface OpenApiOperation {
  parameters?: Array<{ in: string; name: string; required?: boolean; schema?: Schema }>;
  requestBody?: { required?: boolean; content?: Record<string, { schema?: Schema }> };
}

export async function fetchRoutes(url: string, authorization: string): Promise<Route[]> {
  const res = await fetch(`${url}/openapi.json`, { headers: { authorization } });
  if (!res.ok) throw new Error(`GET /openapi.json answered ${res.status}`);
  const doc = (await res.json()) as { paths: Record<string, Record<string, OpenApiOperation>> };
  const routes: Route[] = [];
  // Sorted, so the arbitraries (and so every seed) do not depend on the document's key order.
  for (const path of Object.keys(doc.paths).sort()) {
    const ops = doc.paths[path]!;
    for (const method of Object.keys(ops).sort()) {
      const op = ops[method]!;
      const params = (where: string): Param[] =>
        (op.parameters ?? []).filter((p) => p.in === where).map((p) => ({ name: p.name, schema: p.schema ?? {}, required: p.required === true }));
      const body = op.requestBody?.content?.["application/json"]?.schema;
      routes.push({
        method: method.toUpperCase(),
        path,
        pathParams: params("path"),
        query: params("query"),
        headers: params("header"),
        ...(body ? { body } : {}),
        bodyRequired: op.requestBody?.required === true,
      });
    }
  }
  return routes;
}
