import { answerInvitation } from './accept-invitation';

/** The invitee declines: the invitation is answered and nothing else changes. */
export const declineInvitation = (s: Parameters<typeof answerInvitation>[0], cmd: Parameters<typeof answerInvitation>[2]) =>
  answerInvitation(s, 'DeclineInvitation', cmd);
