import { useEffect, useRef, useState } from 'preact/hooks';
import type { Billing } from '../../api-types';
import { ErrorMessage, Message } from '../../components/ui';

/** The page's action counter: a card starting an action clears the other cards' old messages. */
export interface Actions {
  seq: number;
  begin(): number;
}

export type Outcome = { kind: 'success' | 'warning' | 'info'; text: string } | null;

/** What the page hands each of its action cards. */
export interface CardProps {
  billing: Billing;
  isAdmin: boolean;
  onChanged: () => Promise<void>;
  actions: Actions;
}

export function useCardMessages(actions: Actions) {
  const mine = useRef(-1);
  const [error, setError] = useState<unknown>(null);
  const [outcome, setOutcome] = useState<Outcome>(null);
  useEffect(() => {
    if (actions.seq !== mine.current) {
      setError(null);
      setOutcome(null);
    }
  }, [actions.seq]);
  return {
    error,
    outcome,
    setError,
    setOutcome,
    start() {
      mine.current = actions.begin();
      setError(null);
      setOutcome(null);
    },
    clear() {
      setError(null);
      setOutcome(null);
    },
    view: (
      <>
        <ErrorMessage error={error} />
        {outcome && <Message kind={outcome.kind}>{outcome.text}</Message>}
      </>
    ),
  };
}

/** The most one charge may be (the API's limit). */
export const MAX_CHARGE_USD = '999999.99';

export const val = (e: Event) => (e.target as HTMLInputElement).value;
