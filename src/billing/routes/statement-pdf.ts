import PDFDocument from 'pdfkit';
import type { z } from 'zod';
import type { receiptBody, statementBody } from './statement-schemas';

/**
 * The statement and the receipt as PDFs a person can file: A4, the built-in Helvetica (no font
 * files), amounts exactly as the JSON has them (decimal strings, never re-rounded through a float).
 */

type Statement = z.input<typeof statementBody>;
type Receipt = z.input<typeof receiptBody>;

function render(title: string, draw: (doc: PDFKit.PDFDocument) => void): Promise<Buffer> {
  // A fixed creation date keeps the same statement byte-identical between downloads.
  const doc = new PDFDocument({
    size: 'A4',
    margin: 50,
    info: { Title: title, Producer: 'tollgate', Creator: 'tollgate', CreationDate: new Date(0) },
  });
  const chunks: Buffer[] = [];
  doc.on('data', (c: Buffer) => chunks.push(c));
  const done = new Promise<Buffer>((ok, fail) => {
    doc.on('end', () => ok(Buffer.concat(chunks)));
    doc.on('error', fail);
  });
  draw(doc);
  doc.end();
  return done;
}

/** One row of columns at fixed x positions; the last column right-aligned (amounts). */
function row(doc: PDFKit.PDFDocument, cells: string[], xs: number[], opts: { bold?: boolean } = {}) {
  const y = doc.y;
  doc.font(opts.bold ? 'Helvetica-Bold' : 'Helvetica').fontSize(9);
  cells.forEach((c, i) => {
    const last = i === cells.length - 1;
    const width = (i + 1 < xs.length ? xs[i + 1] : 545) - xs[i] - 4;
    doc.text(c, xs[i], y, { width, align: last ? 'right' : 'left', lineBreak: false, ellipsis: true });
  });
  doc.x = 50;
  doc.moveDown(0.4);
  if (doc.y > 770) doc.addPage();
}

const usd = (v: string) => `${v} USD`;

export function statementPdf(st: Statement): Promise<Buffer> {
  return render(`tollgate statement ${st.month}`, (doc) => {
    doc.font('Helvetica-Bold').fontSize(16).text(`Statement ${st.month}`);
    doc.font('Helvetica').fontSize(10).text(`Workspace ${st.workspaceName} (${st.workspaceId})`);
    doc.text(`Period ${st.periodStart} to ${st.periodEnd} (UTC, end exclusive)${st.complete ? '' : ' — month in progress'}`);
    doc.moveDown();
    row(doc, ['Opening balance', usd(st.openingBalance)], [50, 300], { bold: true });
    doc.moveDown(0.5);
    doc.font('Helvetica-Bold').fontSize(11).text('Deposits, reloads and credit grants');
    row(doc, ['Time', 'Kind', 'Payment reference', 'Amount'], [50, 190, 250, 430], { bold: true });
    for (const c of st.credits) row(doc, [c.at, c.kind, c.paymentReference ?? c.reference, usd(c.amount)], [50, 190, 250, 430]);
    if (!st.credits.length) row(doc, ['None this month', ''], [50, 300]);
    for (const e of st.expiries) row(doc, [e.at, 'expiry', e.reference, usd(`-${e.amount}`)], [50, 190, 250, 430]);
    doc.moveDown(0.5);
    doc.font('Helvetica-Bold').fontSize(11).text('Usage per key and config');
    row(doc, ['Key', 'Config', 'Requests', 'Tokens in / out', 'Cost'], [50, 200, 320, 380, 460], { bold: true });
    for (const u of st.usage) {
      row(
        doc,
        [
          u.keyName ? `${u.keyName} (${u.keyId.slice(0, 8)})` : u.keyId,
          u.config,
          String(u.requests),
          `${u.inputTokens} / ${u.outputTokens}`,
          usd(u.cost),
        ],
        [50, 200, 320, 380, 460],
      );
    }
    if (!st.usage.length) row(doc, ['No usage this month', ''], [50, 300]);
    doc.moveDown(0.5);
    row(doc, ['Deposits', usd(st.totals.deposits)], [50, 300]);
    row(doc, ['Reloads', usd(st.totals.reloads)], [50, 300]);
    row(doc, ['Credit grants', usd(st.totals.grants)], [50, 300]);
    row(doc, ['Usage and expiries (debits)', usd(st.totals.debits)], [50, 300]);
    row(doc, ['Closing balance', usd(st.closingBalance)], [50, 300], { bold: true });
    doc.moveDown();
    doc
      .font('Helvetica')
      .fontSize(8)
      // ASCII '-': the PDF's standard Helvetica has no U+2212 (it printed as a broken glyph).
      .text('Opening balance + deposits + reloads + grants - usage - expiries = closing balance. Amounts are exact (nano-USD precision).')
      .text(`Inference receipts this month: ${st.receipts.count}; SHA-256 digest over them: ${st.receipts.value}`);
  });
}

export function receiptPdf(r: Receipt): Promise<Buffer> {
  return render(`tollgate receipt ${r.receiptNumber}`, (doc) => {
    doc.font('Helvetica-Bold').fontSize(16).text('Receipt');
    doc.font('Helvetica').fontSize(10).text(`Workspace ${r.workspaceName} (${r.workspaceId})`);
    doc.moveDown();
    const xs = [50, 200];
    row(doc, ['Receipt number', r.receiptNumber], xs);
    row(doc, ['Paid at (UTC)', r.paidAt], xs);
    row(doc, ['Amount', usd(r.amount)], xs, { bold: true });
    row(doc, ['Payment reference', r.paymentReference], xs);
    row(doc, ['Paid with', r.card ? `${r.card.brand} ending ${r.card.last4} (${r.gateway})` : r.gateway], xs);
    row(doc, ['Paid by', [r.paidBy.name, r.paidBy.email].filter(Boolean).join(', ') || r.paidBy.userId], xs);
    doc.moveDown();
    doc.font('Helvetica').fontSize(8).text('Prepaid credit for the tollgate API, added to the workspace balance.');
  });
}
