import type { Billing } from '../../api-types';
import { Cents } from '../../components/money';
import { Message } from '../../components/ui';
import { usd } from '../../format';
import { useWorkspace } from '../../state';

/** The balance figures at the top of the page, and what is still missing before keys can be created. */
export function BalanceSummary({ billing: b, isAdmin }: { billing: Billing; isAdmin: boolean }) {
  const ws = useWorkspace();
  return (
    <>
      <div class="stats" aria-label="Balance">
        <div class="stat">
          <p class="stat-label">Balance</p>
          <p class="stat-value" data-testid="balance">
            <Cents value={b.balance} />
          </p>
        </div>
        <div class="stat">
          <p class="stat-label">Available (less requests in flight)</p>
          <p class="stat-value">
            <Cents value={b.available} />
          </p>
        </div>
        <div class="stat">
          <p class="stat-label">Spent on requests</p>
          <p class="stat-value">
            <Cents value={b.spent} />
          </p>
        </div>
        <div class="stat">
          <p class="stat-label">Status</p>
          <p class="stat-value">{b.funded ? 'Funded' : 'Not funded'}</p>
        </div>
      </div>
      {!b.funded && (
        <Message kind="info">
          {isAdmin
            ? `To create API keys, add a payment method and deposit at least ${usd(b.initialDeposit)} in total (deposited so far: ${usd(b.deposited)}).`
            : `This workspace is not funded yet: an admin of ${ws.name} must add a payment method and deposit at least ${usd(b.initialDeposit)} before keys can be created.`}
        </Message>
      )}
    </>
  );
}
