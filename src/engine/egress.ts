// Egress safety for HTTP targets: the server calls URLs that users chose, so
// by default it refuses to reach loopback, private, link-local, metadata and
// other non-public addresses, unless an operator allow-lists the host
// (--allow-target-hosts). Names are checked on the addresses they resolve to
// at connect time (the lookup the socket itself uses, so a name that rebinds
// to 127.0.0.1 between two calls is refused too), IP literals before the
// call, and every socket once more on its remote address after it connects.

import { lookup as dnsLookup } from "node:dns";
import { BlockList, isIP, type LookupFunction, type Socket } from "node:net";
import { buildConnector } from "undici";

/** A refused target: the attempt fails permanently with this message. */
export class EgressRefused extends Error {
  readonly code = "EGRESS_REFUSED";
}

/** The origins an operator allowed: host names, IP addresses and CIDR ranges. */
export class EgressAllowList {
  private readonly names = new Set<string>();
  private readonly ranges = new BlockList();
  private empty = true;

  constructor(entries: readonly string[] = []) {
    for (const raw of entries) {
      const entry = normaliseHost(raw);
      if (entry === "") continue;
      this.empty = false;
      const slash = entry.indexOf("/");
      if (slash > 0 && isIP(entry.slice(0, slash))) {
        const net = entry.slice(0, slash);
        this.ranges.addSubnet(net, Number(entry.slice(slash + 1)), isIP(net) === 6 ? "ipv6" : "ipv4");
      } else if (isIP(entry)) {
        this.ranges.addAddress(entry, isIP(entry) === 6 ? "ipv6" : "ipv4");
      } else {
        this.names.add(entry);
      }
    }
  }

  /** True when the URL's host name, or the restricted address it reached, is allowed. */
  allows(host: string, address?: string): boolean {
    if (this.empty) return false;
    if (this.names.has(normaliseHost(host))) return true;
    for (const a of [host, address]) {
      if (a === undefined) continue;
      const ip = normaliseHost(a);
      const family = isIP(ip);
      if (family !== 0 && this.ranges.check(ip, family === 6 ? "ipv6" : "ipv4")) return true;
    }
    return false;
  }
}

function normaliseHost(host: string): string {
  return host
    .trim()
    .toLowerCase()
    .replace(/^\[|\]$/g, "")
    .replace(/%.*$/, "")
    .replace(/\.$/, "");
}

/**
 * Why a target URL is refused before any connection, or null: only http and
 * https, and no restricted IP literal unless allowed. (WHATWG URL parsing has
 * already turned `http://2130706433/` and `http://0x7f.1/` into 127.0.0.1.)
 */
export function urlRefusal(url: string, allow: EgressAllowList): string | null {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    return `target URL ${JSON.stringify(url)} is not a valid URL`;
  }
  if (parsed.protocol !== "http:" && parsed.protocol !== "https:") {
    return `target scheme ${parsed.protocol} is not allowed; only http and https`;
  }
  const host = normaliseHost(parsed.hostname);
  if (isIP(host) && isRestricted(host) && !allow.allows(host)) {
    return `target ${host} is a restricted address (loopback, private, link-local or metadata); allow it with --allow-target-hosts`;
  }
  return null;
}

/** scheme://host:port of a URL, with the default port made explicit. */
export function originOf(url: string): string {
  const u = new URL(url);
  const port = u.port || (u.protocol === "https:" ? "443" : "80");
  return `${u.protocol}//${u.hostname}:${port}`;
}

/**
 * A DNS lookup that refuses names resolving to a restricted address (any of
 * them: a name with one public and one private address is refused, since the
 * socket may pick either) unless the name or the address is allowed.
 */
export function guardedLookup(allow: EgressAllowList, resolve: LookupFunction = dnsLookup as LookupFunction): LookupFunction {
  return (hostname, options, callback) => {
    resolve(hostname, { ...options, all: true }, (err, addresses) => {
      if (err) return callback(err, "", 0);
      const list = addresses as unknown as { address: string; family: number }[];
      const refused = list.find((a) => isRestricted(a.address) && !allow.allows(hostname, a.address));
      if (refused) {
        const error = new EgressRefused(
          `target ${normaliseHost(hostname)} resolves to a restricted address (${refused.address}); allow it with --allow-target-hosts`,
        );
        return callback(error as NodeJS.ErrnoException, "", 0);
      }
      if ((options as { all?: boolean }).all) return (callback as unknown as (e: null, a: typeof list) => void)(null, list);
      const first = list[0];
      if (!first) return callback(Object.assign(new Error(`no address for ${hostname}`), { code: "ENOTFOUND" }), "", 0);
      callback(null, first.address, first.family);
    });
  };
}

/**
 * undici's connector with the guarded lookup, checking the connected socket's
 * remote address once more: whatever path produced the address, a socket to
 * a restricted one that is not allowed is closed before a byte is written.
 */
export function guardedConnector(allow: EgressAllowList, options: { timeoutMs?: number } = {}): buildConnector.connector {
  const connect = buildConnector({ lookup: guardedLookup(allow), timeout: options.timeoutMs ?? 10_000 });
  return (opts, callback) => {
    connect(opts, (err, socket) => {
      if (err || !socket) return callback(err ?? new Error("no socket"), null);
      const remote = (socket as Socket).remoteAddress;
      if (remote !== undefined && isRestricted(remote) && !allow.allows(opts.hostname, remote)) {
        socket.destroy();
        return callback(
          new EgressRefused(
            `target ${normaliseHost(opts.hostname)} connected to a restricted address (${remote}); allow it with --allow-target-hosts`,
          ),
          null,
        );
      }
      callback(null, socket);
    });
  };
}

// ---- address classes --------------------------------------------------------

const V4_RESTRICTED: [number, number][] = [
  [v4("0.0.0.0"), 8], // "this network"
  [v4("10.0.0.0"), 8], // private
  [v4("100.64.0.0"), 10], // carrier-grade NAT
  [v4("127.0.0.0"), 8], // loopback
  [v4("169.254.0.0"), 16], // link-local, cloud metadata (169.254.169.254)
  [v4("172.16.0.0"), 12], // private
  [v4("192.0.0.0"), 24], // IETF protocol assignments (some clouds' metadata)
  [v4("192.0.2.0"), 24], // documentation
  [v4("192.88.99.0"), 24], // 6to4 relay anycast
  [v4("192.168.0.0"), 16], // private
  [v4("198.18.0.0"), 15], // benchmarking
  [v4("198.51.100.0"), 24], // documentation
  [v4("203.0.113.0"), 24], // documentation
  [v4("224.0.0.0"), 4], // multicast
  [v4("240.0.0.0"), 4], // reserved, broadcast
];

function v4(address: string): number {
  const parts = address.split(".").map(Number);
  return (((parts[0]! << 24) >>> 0) + (parts[1]! << 16) + (parts[2]! << 8) + parts[3]!) >>> 0;
}

function v4Restricted(n: number): boolean {
  return V4_RESTRICTED.some(([net, bits]) => n >>> (32 - bits) === net >>> (32 - bits));
}

/** The eight 16-bit groups of an IPv6 address (with an IPv4 tail), or null. */
export function parseIPv6(address: string): number[] | null {
  let text = address.toLowerCase().replace(/%.*$/, "");
  const tail = /(\d+\.\d+\.\d+\.\d+)$/.exec(text);
  if (tail) {
    if (isIP(tail[1]!) !== 4) return null;
    const n = v4(tail[1]!);
    text = `${text.slice(0, -tail[1]!.length)}${(n >>> 16).toString(16)}:${(n & 0xffff).toString(16)}`;
  }
  const halves = text.split("::");
  if (halves.length > 2) return null;
  const head = halves[0] ? halves[0].split(":") : [];
  const rest = halves.length === 2 && halves[1] ? halves[1].split(":") : [];
  const missing = 8 - head.length - rest.length;
  if ((halves.length === 2 && missing < 1) || (halves.length === 1 && missing !== 0)) return null;
  const groups = [...head, ...Array<string>(halves.length === 2 ? missing : 0).fill("0"), ...rest].map((g) => parseInt(g, 16));
  return groups.length === 8 && groups.every((g) => Number.isInteger(g) && g >= 0 && g <= 0xffff) ? groups : null;
}

/**
 * True for addresses a callback must not reach by default: loopback,
 * unspecified, private, carrier-grade NAT, link-local and metadata,
 * multicast, reserved and documentation ranges; for IPv6 also unique-local
 * (fc00::/7, which holds AWS's fd00:ec2::254), link- and site-local,
 * multicast, and every form that embeds an IPv4 address (mapped ::ffff:0:0/96,
 * compatible ::/96, NAT64 64:ff9b::/96, 6to4 2002::/16) judged by that address.
 * Teredo and local-use NAT64 are refused outright. Anything unparsable is refused.
 */
export function isRestricted(address: string): boolean {
  const host = address.replace(/^\[|\]$/g, "");
  const family = isIP(host.replace(/%.*$/, ""));
  if (family === 4) return v4Restricted(v4(host));
  if (family !== 6) return true;
  const g = parseIPv6(host);
  if (!g) return true;
  const embedded = (hi: number, lo: number) => v4Restricted(((hi << 16) >>> 0) + lo);
  const zeros = (from: number, to: number) => g.slice(from, to).every((x) => x === 0);
  if (zeros(0, 5) && g[5] === 0xffff) return embedded(g[6]!, g[7]!); // ::ffff:a.b.c.d
  if (zeros(0, 6)) return g[6] === 0 && g[7]! <= 1 ? true : embedded(g[6]!, g[7]!); // ::, ::1, ::a.b.c.d
  if (g[0] === 0x64 && g[1] === 0xff9b && zeros(2, 6)) return embedded(g[6]!, g[7]!); // NAT64
  if (g[0] === 0x64 && g[1] === 0xff9b && g[2] === 1) return true; // local-use NAT64
  if (g[0] === 0x2002) return embedded(g[1]!, g[2]!); // 6to4
  if (g[0] === 0x2001 && g[1] === 0) return true; // Teredo
  if (g[0] === 0x2001 && g[1] === 0xdb8) return true; // documentation
  if (g[0] === 0x100 && zeros(1, 4)) return true; // discard-only
  const first = g[0]!;
  return (first & 0xfe00) === 0xfc00 || (first & 0xffc0) === 0xfe80 || (first & 0xffc0) === 0xfec0 || (first & 0xff00) === 0xff00;
}
