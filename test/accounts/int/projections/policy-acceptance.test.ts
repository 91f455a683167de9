import { policyAcceptanceProjection } from '../../../../src/accounts/policy/projections/policy-acceptance/projection';
import { acceptanceOf } from '../../../../src/accounts/policy/projections/policy-acceptance/queries';
import { projectionSpec } from '../../../support/projection-gwt';

const spec = projectionSpec(policyAcceptanceProjection);

describe('policy-acceptance projection', () => {
  test('no acceptance: none on record', () =>
    spec.given().then(async ({ readModels }) => expect(await acceptanceOf(readModels, 'u1')).toBeNull()));

  test('the last version a user accepted, and when', () =>
    spec
      .given(
        { type: 'UsagePolicyAccepted', data: { userId: 'u1', version: '2026-01' }, created: '2026-01-05T00:00:00.000Z' },
        { type: 'UsagePolicyAccepted', data: { userId: 'u2', version: '2026-01' }, created: '2026-01-06T00:00:00.000Z' },
        { type: 'UsagePolicyAccepted', data: { userId: 'u1', version: '2026-03' }, created: '2026-03-02T00:00:00.000Z' },
      )
      .then(async ({ readModels }) => {
        expect(await acceptanceOf(readModels, 'u1')).toEqual({ version: '2026-03', accepted: '2026-03-02T00:00:00.000Z' });
        expect(await acceptanceOf(readModels, 'u2')).toEqual({ version: '2026-01', accepted: '2026-01-06T00:00:00.000Z' });
      }));
});
