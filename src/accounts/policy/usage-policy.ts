/**
 * The usage policy is a versioned document (docs/USAGE-POLICY.md by default). The service serves
 * what this parser reads from it, so the version lives in one place: the document.
 *
 *   Version: 1.0
 *   Effective: 2026-11-22
 *   ## Rules
 *   1. **Title.** Text that may continue on indented lines.
 */
export interface UsageRule {
  number: number;
  title: string;
  text: string;
}

export interface UsagePolicy {
  version: string;
  /** YYYY-MM-DD */
  effectiveDate: string;
  rules: UsageRule[];
}

export class UsagePolicyFormatError extends Error {}

const VERSION = /^Version:\s*([0-9A-Za-z][0-9A-Za-z._-]{0,31})\s*$/m;
const EFFECTIVE = /^Effective:\s*(\d{4}-\d{2}-\d{2})\s*$/m;
const RULE = /^(\d+)\.\s+\*\*(.+?)\*\*\s*(.*)$/;

export function parseUsagePolicy(markdown: string): UsagePolicy {
  const version = VERSION.exec(markdown)?.[1];
  if (!version) throw new UsagePolicyFormatError('no "Version: <version>" line');
  const effectiveDate = EFFECTIVE.exec(markdown)?.[1];
  if (!effectiveDate || Number.isNaN(Date.parse(effectiveDate))) throw new UsagePolicyFormatError('no "Effective: YYYY-MM-DD" line');

  const lines = markdown.split(/\r?\n/);
  const start = lines.findIndex((l) => /^##\s+Rules\s*$/.test(l));
  if (start < 0) throw new UsagePolicyFormatError('no "## Rules" section');
  const rules: UsageRule[] = [];
  for (const line of lines.slice(start + 1)) {
    if (/^#{1,2}\s/.test(line)) break;
    const m = RULE.exec(line);
    if (m) rules.push({ number: Number(m[1]), title: m[2].trim(), text: m[3].trim() });
    else if (rules.length && /^\s+\S/.test(line)) {
      const last = rules[rules.length - 1];
      last.text = `${last.text} ${line.trim()}`.trim();
    }
  }
  if (!rules.length) throw new UsagePolicyFormatError('the "## Rules" section has no numbered rules');
  return { version, effectiveDate, rules };
}
