// New job: a form for POST /v1/jobs. The payload is checked as JSON while it
// is typed; the server checks everything else, and its 4xx error is shown
// next to the field its details.field names (a dotted path such as
// "schedule.cron"), or above the button when it names none of them. On
// success the new job's page opens.

import type { ComponentChildren } from "preact";
import { useState } from "preact/hooks";
import type { Job } from "@duetime/sdk/contract";
import { ApiError, api, describeError } from "../api";
import { Section } from "../components";
import { href, navigate } from "../router";
import { browserZone } from "../time";

type Kind = "at" | "delay" | "cron";
type TargetKind = "pool" | "url";
type FieldName = "name" | "kind" | "runAt" | "delay" | "cron" | "tz" | "target" | "pool" | "url" | "payload" | "maxAttempts";

/** The form field a server error's details.field belongs to, or undefined for one the form does not show. */
export function fieldOf(path: string | undefined): FieldName | undefined {
  if (path === undefined) return undefined;
  const exact: Record<string, FieldName> = {
    name: "name",
    schedule: "kind",
    "schedule.runAt": "runAt",
    "schedule.delaySeconds": "delay",
    "schedule.cron": "cron",
    "schedule.tz": "tz",
    target: "target",
    "target.type": "target",
    "target.pool": "pool",
    "target.url": "url",
  };
  if (exact[path]) return exact[path];
  if (path === "payload" || path.startsWith("payload.") || path.startsWith("payload[")) return "payload";
  if (path.startsWith("retry")) return "maxAttempts";
  if (path.startsWith("schedule")) return "kind";
  if (path.startsWith("target")) return "target";
  return undefined;
}

/** The payload as typed: absent when empty, else parsed JSON or why it is not JSON. */
function parsePayload(text: string): { value?: unknown; error?: string } {
  if (text.trim() === "") return {};
  try {
    return { value: JSON.parse(text) };
  } catch (err) {
    return { error: `Not valid JSON: ${err instanceof Error ? err.message : String(err)}` };
  }
}

function Field({ label, id, error, children }: { label: string; id: string; error: string | undefined; children: ComponentChildren }) {
  return (
    <div class={error ? "field invalid" : "field"}>
      <label htmlFor={id}>{label}</label>
      {children}
      {error ? (
        <span class="field-error" role="alert">
          {error}
        </span>
      ) : null}
    </div>
  );
}

export function NewJobPage() {
  const [name, setName] = useState("");
  const [kind, setKind] = useState<Kind>("cron");
  const [runAt, setRunAt] = useState("");
  const [delay, setDelay] = useState("0");
  const [cron, setCron] = useState("");
  const [tz, setTz] = useState(browserZone);
  const [targetKind, setTargetKind] = useState<TargetKind>("pool");
  const [pool, setPool] = useState("");
  const [url, setUrl] = useState("");
  const [payload, setPayload] = useState("");
  const [maxAttempts, setMaxAttempts] = useState("");
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<unknown>(undefined);
  const parsed = parsePayload(payload);
  const serverField = error instanceof ApiError ? fieldOf(error.details.field) : undefined;
  const errorAt = (field: FieldName): string | undefined => {
    if (field === "payload" && parsed.error) return parsed.error;
    return serverField === field ? (error as ApiError).message : undefined;
  };
  const input = (set: (value: string) => void) => (e: Event) => set((e.target as HTMLInputElement).value);

  const submit = async (event: Event) => {
    event.preventDefault();
    if (parsed.error) return;
    setBusy(true);
    setError(undefined);
    const schedule =
      kind === "cron"
        ? { cron: cron.trim(), tz: tz.trim() }
        : kind === "delay"
          ? { delaySeconds: Number(delay) }
          : // datetime-local is the browser's wall time: Date reads it in the browser's zone.
            { runAt: runAt === "" ? "" : new Date(runAt).toISOString() };
    const spec: Record<string, unknown> = {
      name: name.trim(),
      target: targetKind === "pool" ? { type: "queue", pool: pool.trim() } : { type: "http", url: url.trim() },
      schedule,
    };
    if (parsed.value !== undefined) spec.payload = parsed.value;
    // The other retry fields keep their defaults (10 s backoff up to an hour).
    if (maxAttempts.trim() !== "") spec.retry = { maxAttempts: Number(maxAttempts), backoffSeconds: 10, maxBackoffSeconds: 3600 };
    try {
      const job = await api<Job>("POST", "/v1/jobs", { body: spec });
      navigate(href(["jobs", job.jobId]));
    } catch (err) {
      setError(err);
      setBusy(false);
    }
  };

  return (
    <Section title="New job">
      <form class="form" onSubmit={submit} aria-label="New job">
        <Field label="Job name" id="new-name" error={errorAt("name")}>
          <input id="new-name" name="name" required maxLength={200} value={name} onInput={input(setName)} />
        </Field>

        <fieldset>
          <legend>When</legend>
          <div class="choices">
            {(
              [
                ["at", "Once, at a time"],
                ["delay", "Once, after a delay"],
                ["cron", "Recurring (cron)"],
              ] as [Kind, string][]
            ).map(([value, label]) => (
              <label key={value} class="choice">
                <input type="radio" name="kind" value={value} checked={kind === value} onChange={() => setKind(value)} />
                {label}
              </label>
            ))}
          </div>
          {errorAt("kind") ? (
            <span class="field-error" role="alert">
              {errorAt("kind")}
            </span>
          ) : null}
          {kind === "at" ? (
            <Field label={`Run at (${browserZone})`} id="new-runAt" error={errorAt("runAt")}>
              <input type="datetime-local" id="new-runAt" name="runAt" step="1" required value={runAt} onInput={input(setRunAt)} />
            </Field>
          ) : kind === "delay" ? (
            <Field label="Delay (seconds)" id="new-delaySeconds" error={errorAt("delay")}>
              <input type="number" id="new-delaySeconds" name="delaySeconds" min="0" step="1" required value={delay} onInput={input(setDelay)} />
            </Field>
          ) : (
            <div class="row">
              <Field label="Cron expression" id="new-cron" error={errorAt("cron")}>
                <input id="new-cron" name="cron" required placeholder="0 9 * * MON-FRI" value={cron} onInput={input(setCron)} />
              </Field>
              <Field label="Time zone" id="new-tz" error={errorAt("tz")}>
                <input id="new-tz" name="tz" required placeholder="Europe/London" value={tz} onInput={input(setTz)} />
              </Field>
            </div>
          )}
        </fieldset>

        <fieldset>
          <legend>Target</legend>
          <div class="choices">
            <label class="choice">
              <input type="radio" name="targetKind" value="pool" checked={targetKind === "pool"} onChange={() => setTargetKind("pool")} />A worker
              pool
            </label>
            <label class="choice">
              <input type="radio" name="targetKind" value="url" checked={targetKind === "url"} onChange={() => setTargetKind("url")} />
              An HTTP URL (POST)
            </label>
          </div>
          {errorAt("target") ? (
            <span class="field-error" role="alert">
              {errorAt("target")}
            </span>
          ) : null}
          {targetKind === "pool" ? (
            <Field label="Pool" id="new-pool" error={errorAt("pool")}>
              <input id="new-pool" name="pool" required placeholder="emails" value={pool} onInput={input(setPool)} />
            </Field>
          ) : (
            <Field label="URL" id="new-url" error={errorAt("url")}>
              <input type="url" id="new-url" name="url" required placeholder="https://example.test/hook" value={url} onInput={input(setUrl)} />
            </Field>
          )}
        </fieldset>

        <Field label="Payload (JSON, optional)" id="new-payload" error={errorAt("payload")}>
          <textarea
            id="new-payload"
            name="payload"
            rows={5}
            spellcheck={false}
            placeholder='{"to": "ada@example.test"}'
            value={payload}
            onInput={input(setPayload)}
          />
        </Field>
        <Field label="Max attempts (optional, default 3)" id="new-maxAttempts" error={errorAt("maxAttempts")}>
          <input
            type="number"
            id="new-maxAttempts"
            name="maxAttempts"
            min="1"
            max="1000"
            step="1"
            value={maxAttempts}
            onInput={input(setMaxAttempts)}
          />
        </Field>

        {error !== undefined && serverField === undefined ? (
          <div class="error" role="alert">
            {describeError(error)}
          </div>
        ) : null}
        <div class="actions">
          <button type="submit" disabled={busy || parsed.error !== undefined}>
            {busy ? "Creating…" : "Create job"}
          </button>
        </div>
      </form>
    </Section>
  );
}
