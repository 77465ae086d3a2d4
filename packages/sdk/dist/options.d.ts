export declare function rejectUnknownOptions(owner: string, options: object, known: readonly string[]): void;
export declare function closest(word: string, candidates: readonly string[]): string | undefined;
export declare function requireInteger(owner: string, name: string, value: number, min: number, max: number): number;
