import { useEffect, useId, useRef, useState } from 'preact/hooks';

/**
 * A stacked bar chart drawn as SVG: no chart library, a few hundred bytes of markup per chart. It
 * is an image with a text summary for screen readers, plus the same numbers as a table.
 */
export interface Series {
  name: string;
  values: number[];
}

/** Okabe–Ito: distinguishable with every common colour-vision deficiency. */
export const PALETTE = ['#0072B2', '#E69F00', '#009E73', '#CC79A7', '#56B4E9', '#D55E00', '#444444', '#8C6D1F'];

/** Drawn at the width it is shown at (one SVG unit = one CSS pixel), so labels stay 12 px on a phone. */
const DEFAULT_W = 960;
const MIN_W = 260;
const H = 200;
/** Room one time label needs along the x axis. */
const LABEL_SPACE = 72;
const PAD = { left: 72, right: 12, top: 12, bottom: 28 };

/** A round top for the y axis; for counts, an even whole number, so the middle line is whole too. */
export function niceMax(v: number, integers = false): number {
  if (integers) {
    if (v <= 2) return 2;
    const exp = Math.pow(10, Math.floor(Math.log10(v)));
    for (const m of [2, 4, 10]) if (m * exp >= v) return m * exp;
    return 20 * exp;
  }
  if (v <= 0) return 1;
  const exp = Math.pow(10, Math.floor(Math.log10(v)));
  for (const m of [1, 2, 2.5, 5, 10]) if (m * exp >= v) return m * exp;
  return 10 * exp;
}

export function BarChart({
  title,
  times,
  series,
  format,
  timeLabel,
  testId,
  totalText,
  integers,
}: {
  title: string;
  times: number[];
  series: Series[];
  format: (n: number) => string;
  timeLabel: (t: number) => string;
  testId?: string;
  /** The exact total to print (money), when `format(total)` of the float sum would round it. */
  totalText?: string;
  /** The values are counts: whole-number axis lines. */
  integers?: boolean;
}) {
  const id = useId();
  const figure = useRef<HTMLElement>(null);
  const [W, setW] = useState(DEFAULT_W);
  useEffect(() => {
    const el = figure.current;
    if (!el || typeof ResizeObserver === 'undefined') return;
    const ro = new ResizeObserver(([entry]) => setW(Math.max(MIN_W, Math.round(entry.contentRect.width))));
    ro.observe(el);
    return () => ro.disconnect();
  }, []);
  const totals = times.map((_, i) => series.reduce((sum, s) => sum + (s.values[i] ?? 0), 0));
  const total = totals.reduce((a, b) => a + b, 0);
  const peak = Math.max(0, ...totals);
  const peakAt = totals.indexOf(peak);
  const max = niceMax(peak, integers);
  const plotW = W - PAD.left - PAD.right;
  const plotH = H - PAD.top - PAD.bottom;
  const n = Math.max(times.length, 1);
  const slot = plotW / n;
  const barW = Math.max(1, slot * 0.72);
  const y = (v: number) => PAD.top + plotH - (v / max) * plotH;
  const ticks = [0, max / 2, max];
  const labelEvery = Math.max(1, Math.ceil(n / Math.max(2, Math.floor(plotW / LABEL_SPACE))));
  const summary =
    total === 0
      ? `${title}: nothing in this period.`
      : `${title}: ${totalText ?? format(total)} in total; the highest was ${format(peak)} at ${timeLabel(times[peakAt])}.`;

  return (
    <figure ref={figure} class="chart" data-testid={testId} data-total={String(total)} aria-labelledby={`${id}-cap`}>
      <figcaption id={`${id}-cap`}>
        <span class="chart-title">{title}</span> <span class="chart-total">Total: {totalText ?? format(total)}</span>
      </figcaption>
      <svg viewBox={`0 0 ${W} ${H}`} role="img" aria-label={summary} class="chart-svg">
        {ticks.map((t) => (
          <g key={t}>
            <line x1={PAD.left} x2={W - PAD.right} y1={y(t)} y2={y(t)} class="grid" />
            <text x={PAD.left - 6} y={y(t) + 4} text-anchor="end" class="axis-label">
              {format(t)}
            </text>
          </g>
        ))}
        {times.map((t, i) => {
          let acc = 0;
          const x = PAD.left + i * slot + (slot - barW) / 2;
          return (
            <g key={t}>
              <title>{`${timeLabel(t)}: ${format(totals[i])}${
                series.length > 1
                  ? ` (${series
                      .filter((s) => s.values[i])
                      .map((s) => `${s.name} ${format(s.values[i])}`)
                      .join(', ')})`
                  : ''
              }`}</title>
              {series.map((s, si) => {
                const v = s.values[i] ?? 0;
                if (v <= 0) return null;
                const y0 = y(acc);
                acc += v;
                const y1 = y(acc);
                return (
                  <rect
                    key={s.name}
                    x={x}
                    y={y1}
                    width={barW}
                    height={Math.max(1, y0 - y1)}
                    fill={PALETTE[si % PALETTE.length]}
                    class="bar"
                  />
                );
              })}
              {i % labelEvery === 0 && (
                <text x={x + barW / 2} y={H - 8} text-anchor="middle" class="axis-label">
                  {timeLabel(t)}
                </text>
              )}
            </g>
          );
        })}
        <line x1={PAD.left} x2={W - PAD.right} y1={y(0)} y2={y(0)} class="axis" />
      </svg>
      {series.length > 0 && (
        <ul class="legend" aria-label={`${title} legend`}>
          {series.map((s, si) => (
            <li key={s.name}>
              <svg class="swatch" width="12" height="12" viewBox="0 0 12 12" aria-hidden="true">
                <rect width="12" height="12" rx="2" fill={PALETTE[si % PALETTE.length]} />
              </svg>
              {s.name}
            </li>
          ))}
        </ul>
      )}
    </figure>
  );
}
