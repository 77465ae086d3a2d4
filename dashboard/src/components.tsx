// Small pieces the pages share: a time (local, UTC on hover), a state badge,
// an error box, and useLoad(), which loads (and optionally polls) an API read.

import type { ComponentChildren } from "preact";
import { useCallback, useEffect, useRef, useState } from "preact/hooks";
import { describeError } from "./api";
import { localTime, relative, utcTime } from "./time";

export function Time({ iso, rel = false }: { iso: string | null | undefined; rel?: boolean }) {
  if (!iso) return <span class="muted">—</span>;
  return (
    <time dateTime={iso} title={utcTime(iso)}>
      {localTime(iso)}
      {rel ? <span class="muted"> ({relative(iso)})</span> : null}
    </time>
  );
}

export function StateBadge({ state }: { state: string }) {
  return <span class={`badge state-${state.toLowerCase()}`}>{state}</span>;
}

export function ErrorBox({ error }: { error: unknown }) {
  if (error === undefined || error === null) return null;
  return (
    <div class="error" role="alert">
      {describeError(error)}
    </div>
  );
}

export function Json({ value }: { value: unknown }) {
  if (value === undefined) return <span class="muted">—</span>;
  return <pre class="json">{JSON.stringify(value, null, 2)}</pre>;
}

export function Section({ title, children, actions }: { title: string; children: ComponentChildren; actions?: ComponentChildren }) {
  return (
    <section class="card">
      <header class="card-head">
        <h2>{title}</h2>
        {actions ? <div class="actions">{actions}</div> : null}
      </header>
      {children}
    </section>
  );
}

export interface Loaded<T> {
  data: T | undefined;
  error: unknown;
  loading: boolean;
  reload: () => void;
}

/**
 * Runs load() when deps change, and every pollMs while the tab is visible.
 * The last good data stays shown while a reload fails (its error beside it).
 */
export function useLoad<T>(load: (signal: AbortSignal) => Promise<T>, deps: unknown[], pollMs?: number): Loaded<T> {
  const [data, setData] = useState<T | undefined>(undefined);
  const [error, setError] = useState<unknown>(undefined);
  const [loading, setLoading] = useState(true);
  const [tick, setTick] = useState(0);
  const loadRef = useRef(load);
  loadRef.current = load;
  useEffect(() => {
    setData(undefined);
    setError(undefined);
  }, deps);
  useEffect(() => {
    const controller = new AbortController();
    setLoading(true);
    loadRef
      .current(controller.signal)
      .then((value) => {
        if (controller.signal.aborted) return;
        setData(value);
        setError(undefined);
      })
      .catch((err: unknown) => {
        if (!controller.signal.aborted) setError(err);
      })
      .finally(() => {
        if (!controller.signal.aborted) setLoading(false);
      });
    return () => controller.abort();
  }, [...deps, tick]);
  useEffect(() => {
    if (pollMs === undefined) return;
    const timer = setInterval(() => {
      if (document.visibilityState === "visible") setTick((t) => t + 1);
    }, pollMs);
    return () => clearInterval(timer);
  }, [pollMs]);
  const reload = useCallback(() => setTick((t) => t + 1), []);
  return { data, error, loading, reload };
}
