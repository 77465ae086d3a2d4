// Dead letters: executions that exhausted their retries or failed for good;
// inspect one (its last error and payload) and replay it (role admin).

import { Fragment } from "preact";
import { useState } from "preact/hooks";
import { api, type DeadLetter, type Page } from "../api";
import { ErrorBox, Json, Section, Time, useLoad } from "../components";
import { href, navigate } from "../router";

function Replay({ item, onDone }: { item: DeadLetter; onDone: () => void }) {
  const [error, setError] = useState<unknown>(undefined);
  const [busy, setBusy] = useState(false);
  return (
    <>
      <button
        type="button"
        disabled={busy}
        onClick={async () => {
          setBusy(true);
          setError(undefined);
          try {
            await api("POST", `/v1/dead-letters/${encodeURIComponent(item.executionId)}:replay`, { body: {} });
            onDone();
          } catch (err) {
            setError(err);
          } finally {
            setBusy(false);
          }
        }}
      >
        Replay
      </button>
      <ErrorBox error={error} />
    </>
  );
}

export function DeadLettersPage({ query }: { query: URLSearchParams }) {
  const cursor = query.get("cursor") ?? "";
  const [open, setOpen] = useState<string | undefined>(undefined);
  const [replayed, setReplayed] = useState<string | undefined>(undefined);
  const list = useLoad((signal) => api<Page<DeadLetter>>("GET", "/v1/dead-letters", { query: { cursor, limit: 50 }, signal }), [cursor], 10_000);
  return (
    <Section
      title="Dead letters"
      actions={
        <button type="button" onClick={list.reload}>
          Refresh
        </button>
      }
    >
      {replayed ? (
        <p class="notice" role="status">
          Replayed {replayed}: a new attempt is queued.
        </p>
      ) : null}
      <ErrorBox error={list.error} />
      {list.data === undefined ? null : list.data.items.length === 0 ? (
        <p class="muted empty">No dead letters.</p>
      ) : (
        <table class="list" data-testid="dead-letters-table">
          <thead>
            <tr>
              <th>Job</th>
              <th>Scheduled for</th>
              <th>Attempts</th>
              <th>Dead since</th>
              <th>Last error</th>
              <th />
            </tr>
          </thead>
          <tbody>
            {list.data.items.map((item) => (
              <Fragment key={item.executionId}>
                <tr>
                  <td>
                    <a href={href(["jobs", item.jobId])}>{item.name}</a>
                    <div class="muted small mono">{item.executionId}</div>
                  </td>
                  <td>
                    <Time iso={item.scheduledFor} />
                  </td>
                  <td>{item.attempts}</td>
                  <td>
                    <Time iso={item.deadAt} rel />
                  </td>
                  <td class="small error-text">
                    {typeof item.lastError === "object" && item.lastError !== null && "message" in item.lastError
                      ? String((item.lastError as { message: unknown }).message)
                      : JSON.stringify(item.lastError)}
                  </td>
                  <td class="nowrap">
                    <button type="button" class="link" onClick={() => setOpen(open === item.executionId ? undefined : item.executionId)}>
                      {open === item.executionId ? "Hide" : "Inspect"}
                    </button>
                    <Replay
                      item={item}
                      onDone={() => {
                        setReplayed(item.executionId);
                        list.reload();
                      }}
                    />
                  </td>
                </tr>
                {open === item.executionId ? (
                  <tr class="detail">
                    <td colSpan={6}>
                      <Json value={{ lastError: item.lastError, payload: item.payload }} />
                    </td>
                  </tr>
                ) : null}
              </Fragment>
            ))}
          </tbody>
        </table>
      )}
      <div class="pager">
        <button type="button" disabled={cursor === ""} onClick={() => navigate(href(["dead-letters"]))}>
          First page
        </button>
        <button
          type="button"
          disabled={!list.data?.nextCursor}
          onClick={() => navigate(href(["dead-letters"], { cursor: list.data?.nextCursor ?? undefined }))}
        >
          Next →
        </button>
      </div>
    </Section>
  );
}
