// A hash router: "#/jobs/job_1?state=PAUSED" → { path: ["jobs", "job_1"], query }.
// The hash keeps every page one document the server serves as index.html,
// at "/" or under its --dashboard-path prefix alike.

import { useEffect, useState } from "preact/hooks";

export interface Route {
  path: string[];
  query: URLSearchParams;
}

export function parseHash(hash: string): Route {
  const raw = hash.replace(/^#/, "");
  const [pathPart = "", queryPart = ""] = raw.split("?", 2);
  const path = pathPart
    .split("/")
    .filter((s) => s !== "")
    .map((s) => {
      try {
        return decodeURIComponent(s);
      } catch {
        return s;
      }
    });
  return { path, query: new URLSearchParams(queryPart) };
}

export function href(path: string[], query?: Record<string, string | undefined | null>): string {
  const params = new URLSearchParams();
  for (const [name, value] of Object.entries(query ?? {})) if (value !== undefined && value !== null && value !== "") params.set(name, value);
  const qs = params.toString();
  return `#/${path.map(encodeURIComponent).join("/")}${qs === "" ? "" : `?${qs}`}`;
}

export function navigate(to: string): void {
  window.location.hash = to.replace(/^#/, "");
}

export function useRoute(): Route {
  const [route, setRoute] = useState(() => parseHash(window.location.hash));
  useEffect(() => {
    const changed = () => setRoute(parseHash(window.location.hash));
    window.addEventListener("hashchange", changed);
    return () => window.removeEventListener("hashchange", changed);
  }, []);
  return route;
}
