// The part of madge's API the import-cycle test uses (madge ships no types).
declare module 'madge' {
  interface MadgeResult {
    obj(): Record<string, string[]>;
    circular(): string[][];
  }
  interface MadgeConfig {
    fileExtensions?: string[];
    tsConfig?: string;
    detectiveOptions?: { ts?: { skipTypeImports?: boolean; mixedImports?: boolean } };
  }
  function madge(path: string | string[], config?: MadgeConfig): Promise<MadgeResult>;
  export = madge;
}
