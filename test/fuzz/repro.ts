// One-line reproducers against a server at $URL started with SERVE_COMMAND
// (server.ts): a curl command for HTTP cases, a `node -e` one-liner and the
// bytes as JSON for raw-socket cases. Very long ones are cut; the seed and
// path replay them exactly.

import type { HttpCase } from "./cases.js";
import type { RawCase } from "./raw.js";

const MAX_INLINE = 4000;

const sq = (s: string) => `'${s.replace(/'/g, "'\\''")}'`;

export function curlFor(c: HttpCase, path: string): string {
  const parts = ["curl -sS -g --path-as-is", c.method === "HEAD" ? "-I" : `-X ${c.method}`, `"$URL"${sq(path + (c.query ? `?${c.query}` : ""))}`];
  for (const [name, value] of c.headers) parts.push(`-H ${sq(`${name}: ${value}`)}`);
  if (c.body) {
    // biome-ignore lint/suspicious/noControlCharactersInRegex: control characters are what makes a body unprintable
    const printable = c.body.encoding === "utf8" && !/[\u0000-\u001f\u007f]/.test(c.body.text);
    if (c.body.text.length > MAX_INLINE) parts.push(`--data-binary '(a body of ${c.body.text.length} chars, cut: replay with the seed and path)'`);
    else if (printable) parts.push(`--data-binary ${sq(c.body.text)}`);
    else
      parts.push(
        `--data-binary @<(node -e ${sq(`process.stdout.write(Buffer.from("${Buffer.from(c.body.text, c.body.encoding).toString("base64")}","base64"))`)})`,
      );
  }
  return cut(parts.join(" "));
}

export function nodeFor(c: RawCase): string {
  const b64 = Buffer.from(c.bytes, "latin1").toString("base64");
  const script = `const s=require("net").connect(new URL(process.env.URL).port,"127.0.0.1",()=>s.write(Buffer.from("${b64}","base64")));s.pipe(process.stdout);setTimeout(()=>s.destroy(),3000)`;
  return `${cut(`node -e ${sq(script)}`)}   # bytes: ${cut(JSON.stringify(c.bytes), 300)}`;
}

function cut(s: string, max = MAX_INLINE): string {
  return s.length > max ? `${s.slice(0, max)}… (${s.length} chars, cut: replay with the seed and path)` : s;
}
