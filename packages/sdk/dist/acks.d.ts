import type { AckItem, CompleteItem, FailItem } from "./api.js";
import { type BackoffPolicy } from "./backoff.js";
/** The server takes at most this many items per batch call or per lease array. */
export declare const MAX_ACKS_PER_CALL = 1000;
export interface PendingAcks {
    complete: CompleteItem[];
    fail: FailItem[];
}
export interface AckSink {
    completeMany(items: CompleteItem[]): Promise<AckItem[]>;
    failMany(items: FailItem[]): Promise<AckItem[]>;
}
export interface AckBufferOptions {
    sink: AckSink;
    /** How long the first pending ack waits for company before a batch call (ms). */
    delayMs: number;
    /** A batch call goes out at once when this many acks are pending. */
    maxBatch: number;
    /** Every answer of a batch call, in the order of `sent`. */
    onAnswers?: (sent: PendingAcks, answers: AckItem[]) => void;
    /** A batch call failed; its acks are back in the buffer and go again after retryInMs. */
    onError?: (error: unknown, count: number, retryInMs: number) => void;
    backoff?: BackoffPolicy;
}
export declare class AckBuffer {
    private readonly options;
    private complete;
    private fail;
    private held;
    private failures;
    private cancelTimer;
    private sending;
    private readonly backoff;
    constructor(options: AckBufferOptions);
    get size(): number;
    addComplete(item: CompleteItem): void;
    addFail(item: FailItem): void;
    /** Suspends timed flushes (the lease loop is about to take the acks). */
    hold(): void;
    /** Resumes timed flushes; what is pending goes after delayMs. */
    release(): void;
    /** Removes up to `limit` acks of each kind, oldest first, for a lease call to carry. */
    take(limit?: number): PendingAcks;
    /** Puts acks back (their lease call failed), ahead of newer ones. */
    restore(acks: PendingAcks): void;
    /** Sends everything pending now, through the batch routes. Never rejects; failures are reported and retried. */
    flush(): Promise<void>;
    /**
     * For shutdown: flushes until nothing is pending, trying at most `attempts`
     * times; timed flushes stop. Resolves true when everything was acknowledged.
     */
    drain(attempts?: number): Promise<boolean>;
    private schedule;
    private stopTimer;
    private sendPending;
}
