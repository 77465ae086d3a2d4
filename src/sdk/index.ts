// duetime/sdk: the SDK package (@duetime/sdk) as an entry of this package, for
// those who install the server and the SDK together.

export * from "@duetime/sdk";
