import type { CallUsage } from '../../api-types';
import { integer, usd } from '../../format';
import { Link } from '../../components/ui';
import { receiptHref } from '../receipt';

/** The finished call's tokens and cost, or why they are not known yet. */
export function CallUsageView({ usage, note }: { usage: CallUsage | null; note: string | null }) {
  return (
    <div role="status" class="call-usage" data-testid="call-usage">
      {usage && (
        <dl class="inline-dl">
          <div>
            <dt>Input tokens</dt>
            <dd>{integer(usage.inputTokens)}</dd>
          </div>
          <div>
            <dt>Output tokens</dt>
            <dd>{integer(usage.outputTokens)}</dd>
          </div>
          <div>
            <dt>Cost</dt>
            <dd>{usd(usage.cost, { minDecimals: 2 })}</dd>
          </div>
          <div>
            <dt>Receipt</dt>
            <dd>
              <Link href={receiptHref(usage.requestId)}>Full receipt</Link>
            </dd>
          </div>
        </dl>
      )}
      {note && <p class="muted">{note}</p>}
    </div>
  );
}
