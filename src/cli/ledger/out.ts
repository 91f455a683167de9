/** One line to stdout. */
export const out = (s: string) => process.stdout.write(s + '\n');
