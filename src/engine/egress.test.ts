import assert from "node:assert/strict";
import type { LookupFunction } from "node:net";
import { test } from "node:test";
import { EgressAllowList, EgressRefused, guardedLookup, isRestricted, originOf, parseIPv6, urlRefusal } from "./egress.js";

test("restricted addresses: loopback, private, CGNAT, link-local/metadata, reserved, and IPv6 forms that embed them", () => {
  const restricted = [
    "127.0.0.1",
    "127.8.9.10",
    "0.0.0.0",
    "0.1.2.3",
    "10.1.2.3",
    "100.64.0.1",
    "100.127.255.254",
    "169.254.169.254",
    "172.16.0.1",
    "172.31.255.255",
    "192.168.1.1",
    "192.0.0.192",
    "198.18.0.1",
    "224.0.0.1",
    "255.255.255.255",
    "::1",
    "::",
    "::ffff:127.0.0.1",
    "::ffff:7f00:1",
    "::ffff:a9fe:a9fe",
    "::127.0.0.1",
    "64:ff9b::a9fe:a9fe",
    "2002:7f00:1::",
    "2002:c0a8:101::1",
    "fc00::1",
    "fd00:ec2::254",
    "fe80::1",
    "fe80::1%eth0",
    "febf::1",
    "ff02::1",
    "2001:0:4136:e378::1",
    "2001:db8::1",
    "not-an-ip",
  ];
  const open = [
    "8.8.8.8",
    "1.1.1.1",
    "100.63.255.255",
    "100.128.0.1",
    "172.32.0.1",
    "169.253.1.1",
    "2606:4700::1111",
    "::ffff:8.8.8.8",
    "2002:808:808::1",
    "64:ff9b::808:808",
  ];
  for (const a of restricted) assert.equal(isRestricted(a), true, a);
  for (const a of open) assert.equal(isRestricted(a), false, a);
});

test("IPv6 parsing handles compression and IPv4 tails", () => {
  assert.deepEqual(parseIPv6("::ffff:1.2.3.4"), [0, 0, 0, 0, 0, 0xffff, 0x102, 0x304]);
  assert.deepEqual(parseIPv6("1::"), [1, 0, 0, 0, 0, 0, 0, 0]);
  assert.equal(parseIPv6("1::2::3"), null);
});

test("URL refusal: only http and https; restricted IP literals (in any spelling the URL parser accepts) unless allowed", () => {
  const none = new EgressAllowList();
  assert.match(urlRefusal("ftp://example.test/x", none) ?? "", /only http and https/);
  assert.match(urlRefusal("file:///etc/passwd", none) ?? "", /only http and https/);
  for (const url of [
    "http://127.0.0.1:9/x",
    "http://2130706433/",
    "http://0x7f.1/",
    "http://[::1]/",
    "http://[::ffff:127.0.0.1]/",
    "http://169.254.169.254/latest/meta-data",
  ]) {
    assert.match(urlRefusal(url, none) ?? "", /restricted address.*--allow-target-hosts/, url);
  }
  assert.equal(urlRefusal("https://example.test/hook", none), null);
  assert.equal(urlRefusal("http://127.0.0.1:9/x", new EgressAllowList(["127.0.0.1"])), null);
  assert.equal(urlRefusal("http://10.1.2.3/x", new EgressAllowList(["10.0.0.0/8"])), null);
  assert.equal(urlRefusal("http://[::1]:9/x", new EgressAllowList(["[::1]"])), null);
  assert.equal(originOf("https://Example.test/a?b"), "https://example.test:443");
  assert.equal(originOf("http://example.test:8080/"), "http://example.test:8080");
});

function fakeResolver(addresses: string[]): LookupFunction {
  return ((_host: string, _opts: unknown, cb: (e: null, a: { address: string; family: number }[]) => void) =>
    cb(
      null,
      addresses.map((address) => ({ address, family: address.includes(":") ? 6 : 4 })),
    )) as unknown as LookupFunction;
}

function lookup(allow: EgressAllowList, host: string, addresses: string[]): Promise<{ err: unknown; address?: string }> {
  return new Promise((resolve) =>
    guardedLookup(allow, fakeResolver(addresses))(host, { family: 0 }, (err, address) => resolve({ err, address: address as string })),
  );
}

test("the lookup guard refuses names that resolve to a restricted address (any of them), unless the name or address is allowed", async () => {
  const none = new EgressAllowList();
  assert.ok((await lookup(none, "rebind.example", ["127.0.0.1"])).err instanceof EgressRefused);
  assert.ok((await lookup(none, "mixed.example", ["93.184.216.34", "10.0.0.1"])).err instanceof EgressRefused);
  assert.equal((await lookup(none, "public.example", ["93.184.216.34"])).address, "93.184.216.34");
  assert.equal((await lookup(new EgressAllowList(["localhost"]), "localhost", ["127.0.0.1"])).address, "127.0.0.1");
  assert.equal((await lookup(new EgressAllowList(["127.0.0.1"]), "localhost", ["127.0.0.1"])).address, "127.0.0.1");
  assert.ok((await lookup(new EgressAllowList(["127.0.0.1"]), "localhost", ["::1"])).err instanceof EgressRefused);
});
