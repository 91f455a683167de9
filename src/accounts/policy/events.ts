import type { Event } from '../../platform/event';

/** On the user's stream (`user-{userId}`): the user accepted this version of the usage policy. */
export type UsagePolicyAccepted = Event<'UsagePolicyAccepted', { userId: string; version: string }>;
