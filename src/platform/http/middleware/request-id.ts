import { randomUUID } from 'node:crypto';
import type { RequestHandler } from 'express';

const SAFE_ID = /^[A-Za-z0-9._:-]{1,128}$/;

/** Every response carries an x-request-id: the caller's own when it is sane, else a new uuid. */
export const requestId: RequestHandler = (req, res, next) => {
  const given = req.header('x-request-id');
  const id = given && SAFE_ID.test(given) ? given : randomUUID();
  res.locals.requestId = id;
  res.setHeader('x-request-id', id);
  next();
};
