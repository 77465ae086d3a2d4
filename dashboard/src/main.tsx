// The dashboard's shell: the login form (a key kept in sessionStorage only),
// the navigation, and the page the hash names.

import { render } from "preact";
import { useEffect, useState } from "preact/hooks";
import "uplot/dist/uPlot.min.css";
import "./styles.css";
import { ApiError, api, describeError, forgetKey, onUnauthenticated, storedKey, storeKey } from "./api";
import { ClusterPage } from "./pages/Cluster";
import { DeadLettersPage } from "./pages/DeadLetters";
import { JobPage } from "./pages/Job";
import { JobsPage } from "./pages/Jobs";
import { OverviewPage } from "./pages/Overview";
import { href, useRoute } from "./router";
import { browserZone } from "./time";

function Login({ onLogin, notice }: { onLogin: (key: string) => void; notice: string | undefined }) {
  const [key, setKey] = useState("");
  const [error, setError] = useState<string | undefined>(notice);
  const [busy, setBusy] = useState(false);
  const submit = async (event: Event) => {
    event.preventDefault();
    setBusy(true);
    setError(undefined);
    const typed = key.trim();
    try {
      // Any read a client key may make tells whether the server takes the key.
      await api("GET", "/v1/jobs", { query: { limit: 1 }, key: typed });
      onLogin(typed);
    } catch (err) {
      // A worker key may not read jobs (403) but is a valid key: let it in, the pages say what it may not see.
      if (err instanceof ApiError && err.status === 403) onLogin(typed);
      else setError(describeError(err));
    } finally {
      setBusy(false);
    }
  };
  return (
    <main class="login">
      <form class="card" onSubmit={submit}>
        <h1>duetime</h1>
        <p>Log in with an API key. It is kept in this tab's session storage only and sent as a Bearer token.</p>
        <label>
          API key
          <input
            type="password"
            name="apiKey"
            autoComplete="off"
            placeholder="dtk_… (empty for a server without keys)"
            value={key}
            onInput={(e) => setKey((e.target as HTMLInputElement).value)}
          />
        </label>
        {error ? (
          <div class="error" role="alert">
            {error}
          </div>
        ) : null}
        <button type="submit" disabled={busy}>
          {busy ? "Checking…" : "Log in"}
        </button>
      </form>
    </main>
  );
}

const NAV: [string, string][] = [
  ["overview", "Overview"],
  ["jobs", "Jobs"],
  ["dead-letters", "Dead letters"],
  ["cluster", "Cluster"],
];

function Page() {
  const route = useRoute();
  const [first = "jobs", second] = route.path;
  let page = <JobsPage query={route.query} />;
  if (first === "jobs" && second !== undefined) page = <JobPage key={second} jobId={second} />;
  else if (first === "overview") page = <OverviewPage />;
  else if (first === "dead-letters") page = <DeadLettersPage query={route.query} />;
  else if (first === "cluster") page = <ClusterPage />;
  const current = first === "jobs" || NAV.some(([id]) => id === first) ? first : "jobs";
  return (
    <>
      <nav class="tabs">
        {NAV.map(([id, label]) => (
          <a key={id} href={href([id])} class={current === id ? "active" : undefined} aria-current={current === id ? "page" : undefined}>
            {label}
          </a>
        ))}
      </nav>
      <main>{page}</main>
    </>
  );
}

function App() {
  const [key, setKey] = useState<string | null>(() => storedKey());
  const [notice, setNotice] = useState<string | undefined>(undefined);
  useEffect(
    () =>
      onUnauthenticated((err) => {
        forgetKey();
        setNotice(describeError(err));
        setKey(null);
      }),
    [],
  );
  if (key === null) {
    return (
      <Login
        notice={notice}
        onLogin={(typed) => {
          storeKey(typed);
          setNotice(undefined);
          setKey(typed);
        }}
      />
    );
  }
  return (
    <div class="shell">
      <header class="top">
        <a class="brand" href={href(["jobs"])}>
          duetime
        </a>
        <span class="muted" title="Times are shown in this time zone; hover a time for UTC">
          {browserZone}
        </span>
        <button
          type="button"
          class="link"
          onClick={() => {
            forgetKey();
            // The next key may belong to another tenant or role: start again from the Jobs list.
            history.replaceState(null, "", window.location.pathname);
            setKey(null);
          }}
        >
          Log out
        </button>
      </header>
      <Page />
    </div>
  );
}

render(<App />, document.getElementById("app")!);
