import type { Server } from 'node:http';
import { STATUS_CODES } from 'node:http';
import type { Socket } from 'node:net';

/**
 * Requests Node refuses before Express sees them (a NUL in a header, headers over the size limit,
 * a malformed request line, a request that took too long) still get a `{"detail": …}` JSON body
 * where the socket can carry one, instead of Node's bare status line.
 */
const ANSWERS: Record<string, [number, string]> = {
  HPE_HEADER_OVERFLOW: [431, 'Request headers too large'],
  ERR_HTTP_REQUEST_TIMEOUT: [408, 'Request timed out'],
  HPE_INVALID_HEADER_TOKEN: [
    400,
    'Malformed request: a header contains a character that is not allowed (such as NUL or a control character)',
  ],
};

export function answerClientErrors(server: Server): void {
  server.on('clientError', (err: NodeJS.ErrnoException, socket: Socket) => {
    if (err.code === 'ECONNRESET' || !socket.writable) {
      socket.destroy();
      return;
    }
    const [status, detail] = ANSWERS[err.code ?? ''] ?? [400, 'Malformed HTTP request'];
    const body = JSON.stringify({ detail });
    socket.end(
      `HTTP/1.1 ${status} ${STATUS_CODES[status]}\r\n` +
        'Content-Type: application/json; charset=utf-8\r\n' +
        'X-Content-Type-Options: nosniff\r\n' +
        `Content-Length: ${Buffer.byteLength(body)}\r\n` +
        'Connection: close\r\n\r\n' +
        body,
    );
  });
}
