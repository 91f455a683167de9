// The part of madge's API the import-graph tests use (madge ships no types).
declare module 'madge' {
  interface MadgeResult {
    obj(): Record<string, string[]>;
    circular(): string[][];
  }
  interface MadgeConfig {
    baseDir?: string;
    fileExtensions?: string[];
    tsConfig?: string;
    detectiveOptions?: { ts?: { skipTypeImports?: boolean; mixedImports?: boolean } };
  }
  function madge(path: string | string[], config?: MadgeConfig): Promise<MadgeResult>;
  export = madge;
}
