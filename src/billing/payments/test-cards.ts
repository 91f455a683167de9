/**
 * Stripe's test payment-method ids and what each does, shared by the sandbox gateway and the local
 * Stripe-wire server used in tests (https://docs.stripe.com/testing#cards).
 */
export type CardBehaviour = 'succeeds' | 'declines' | 'insufficient_funds' | 'requires_authentication';

export interface TestCard {
  brand: string;
  last4: string;
  behaviour: CardBehaviour;
}

export const TEST_CARDS: Record<string, TestCard> = {
  pm_card_visa: { brand: 'visa', last4: '4242', behaviour: 'succeeds' },
  pm_card_visa_debit: { brand: 'visa', last4: '5556', behaviour: 'succeeds' },
  pm_card_mastercard: { brand: 'mastercard', last4: '4444', behaviour: 'succeeds' },
  pm_card_amex: { brand: 'amex', last4: '8431', behaviour: 'succeeds' },
  pm_card_discover: { brand: 'discover', last4: '1117', behaviour: 'succeeds' },
  pm_card_chargeDeclined: { brand: 'visa', last4: '0002', behaviour: 'declines' },
  pm_card_chargeDeclinedInsufficientFunds: { brand: 'visa', last4: '9995', behaviour: 'insufficient_funds' },
  pm_card_authenticationRequired: { brand: 'visa', last4: '3184', behaviour: 'requires_authentication' },
};

export interface CardDecline {
  code: string;
  declineCode: string;
  message: string;
}

/** What charging the card gives: null for success, 'requires_action' on-session for 3-D Secure cards. */
export function testCardResponse(card: TestCard, offSession: boolean): null | 'requires_action' | CardDecline {
  switch (card.behaviour) {
    case 'succeeds':
      return null;
    case 'declines':
      return { code: 'card_declined', declineCode: 'generic_decline', message: 'Your card was declined.' };
    case 'insufficient_funds':
      return { code: 'card_declined', declineCode: 'insufficient_funds', message: 'Your card has insufficient funds.' };
    case 'requires_authentication':
      return offSession
        ? {
            code: 'authentication_required',
            declineCode: 'authentication_required',
            message: 'Your card was declined. This transaction requires authentication.',
          }
        : 'requires_action';
  }
}
