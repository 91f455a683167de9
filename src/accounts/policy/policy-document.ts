import { readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import type { Config } from '../../platform/config';
import { ConfigError } from '../../platform/config';
import { parseUsagePolicy, UsagePolicy } from './usage-policy';
import { projectRoot } from '../../platform/project-root';

const loaded = new Map<string, UsagePolicy>();

export const usagePolicyPath = (config: Pick<Config, 'USAGE_POLICY_FILE'>) =>
  config.USAGE_POLICY_FILE ? resolve(config.USAGE_POLICY_FILE) : join(projectRoot(), 'docs', 'USAGE-POLICY.md');

/**
 * The usage policy this process serves, read once from USAGE_POLICY_FILE (default
 * docs/USAGE-POLICY.md). A publishing operator edits the file and restarts the api processes.
 * A file that cannot be read or parsed is a configuration error: one line naming the setting.
 */
export function usagePolicyOf(config: Pick<Config, 'USAGE_POLICY_FILE'>): UsagePolicy {
  const path = usagePolicyPath(config);
  let policy = loaded.get(path);
  if (!policy) {
    try {
      policy = parseUsagePolicy(readFileSync(path, 'utf8'));
    } catch (err) {
      const why = (err as NodeJS.ErrnoException).code === 'ENOENT' ? 'no such file' : (err as Error).message.split('\n')[0];
      throw new ConfigError([`invalid setting USAGE_POLICY_FILE: cannot use ${path} as the usage policy: ${why}`]);
    }
    loaded.set(path, policy);
  }
  return policy;
}
