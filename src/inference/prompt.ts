import type { ModelConfig } from './events';
import type { ContextEntry, UserMetadata } from './request';
import type { SearchResult } from './search/port';
import { formatLocalTime, formatStamp } from './timezone';

/**
 * Prompt building. A request becomes one instruction message (the config's persona, what we know
 * about the user, web results) followed by the caller's turns. The rendered transcript `text` is
 * what the demo model continues, and exactly what is counted (cl100k_base) and billed as input.
 * An OpenAI-compatible upstream receives the same contents as chat `messages`; its own chat
 * template stands in for our "### …" headers.
 */

export const PERSONAS: Record<ModelConfig, string> = {
  service_3_pi: [
    'You are a warm, emotionally intelligent conversational assistant, here to support the person you are talking with.',
    'Listen closely, acknowledge how they feel, and answer with kindness, patience and honesty.',
    "Mirror the user's tone and style: match how formal or casual they are, how long their messages are, and how much emoji they use (more emoji from them means more from you; none means none).",
    'Keep replies conversational and concise, and ask a gentle follow-up question when it helps.',
    'Be safe: do not help with anything harmful, illegal or dangerous. If someone seems to be in crisis, respond with care and encourage them to contact local emergency services or a crisis line.',
    'Never claim to be human, and do not invent facts: say so when you are not sure.',
  ].join(' '),
  service_3_productivity: [
    'You are a precise assistant optimised for following instructions.',
    'Do exactly what is asked, in the requested format, and nothing more: no filler, no preamble.',
    'Respect every constraint you are given (length, structure, language, tone, fields).',
    'When the user asks for JSON, reply with valid JSON only: no prose and no code fences unless they ask for them.',
    'If an instruction is ambiguous, choose the most reasonable reading and state the assumption in one short sentence.',
    'Be accurate, and say so when you do not know.',
  ].join(' '),
};

const PERSONA_SEGMENTS: Record<ModelConfig, string> = {
  service_3_pi: `### Instruction\n${PERSONAS.service_3_pi}\n\n`,
  service_3_productivity: `### Instruction\n${PERSONAS.service_3_productivity}\n\n`,
};

export interface ChatMessage {
  role: 'system' | 'user' | 'assistant';
  content: string;
}

export interface RenderedPrompt {
  /** The transcript: what is counted and billed. */
  text: string;
  /**
   * `text` cut where cl100k_base always starts a new piece (each segment ends with a line break
   * and the next starts with a non-space), so count(text) = Σ count(segment): see countPrompt.
   */
  segments: string[];
  /** The same contents as chat messages, for OpenAI-compatible upstreams. */
  messages: ChatMessage[];
  /** The last Human turn (what web search and the demo model's topic bias look at). */
  lastHuman: string;
}

export interface PromptInput {
  config: ModelConfig;
  context: ContextEntry[];
  metadata: UserMetadata;
  /** The request's clock: the user's local time is computed from it. */
  now: Date;
  search?: { query: string; results: SearchResult[] };
}

const ROLE: Record<ContextEntry['type'], ChatMessage['role']> = { Instruction: 'system', Human: 'user', AI: 'assistant' };

/** One line, trimmed: metadata never breaks the transcript's structure. */
function clean(value: string | undefined): string {
  return (value ?? '').replace(/\s+/g, ' ').trim();
}

/** "About the user: …" from the metadata, or null when nothing is known. */
export function renderMetadata(metadata: UserMetadata, now: Date): string | null {
  const lines: string[] = [];
  const name = clean(metadata.user_firstname);
  if (name) lines.push(`Their first name is ${name}.`);
  const tz = clean(metadata.user_timezone);
  if (tz) lines.push(`Their local time is ${formatLocalTime(now, tz)} (${tz}).`);
  const place = [metadata.user_city, metadata.user_region, metadata.user_country].map(clean).filter(Boolean);
  if (place.length) lines.push(`They are in ${place.join(', ')}.`);
  return lines.length ? `About the user: ${lines.join(' ')}` : null;
}

/** Web results as an instruction with numbered sources. */
export function renderSearch(query: string, results: SearchResult[], now: Date): string {
  const lines = results.map((r, i) => `[${i + 1}] ${clean(r.title) || r.url} (${r.url})${clean(r.snippet) ? `: ${clean(r.snippet)}` : ''}`);
  return [
    `Web search results for "${clean(query)}" (retrieved ${now.toISOString().slice(0, 16).replace('T', ' ')} UTC):`,
    ...lines,
    'Use these results only where they are relevant, and cite them by number, e.g. [1], with the source link.',
  ].join('\n');
}

function header(entry: ContextEntry, tz: string): string {
  if (entry.tsMs === undefined) return `### ${entry.type}`;
  return `### ${entry.type} (${formatStamp(new Date(entry.tsMs), tz)} ${tz})`;
}

export function renderPrompt(input: PromptInput): RenderedPrompt {
  const tz = clean(input.metadata.user_timezone) || 'UTC';
  const system = [PERSONAS[input.config]];
  const about = renderMetadata(input.metadata, input.now);
  if (about) system.push(about);
  if (input.search && input.search.results.length) system.push(renderSearch(input.search.query, input.search.results, input.now));
  const instruction = system.join('\n\n');

  const messages: ChatMessage[] = [{ role: 'system', content: instruction }];
  // The persona's segment is the same string for every request of a config: its count is cached.
  const segments: string[] = [PERSONA_SEGMENTS[input.config], ...system.slice(1).map((part) => `${part}\n\n`)];
  let lastHuman = '';
  for (const entry of input.context) {
    messages.push({ role: ROLE[entry.type], content: entry.text });
    segments.push(`${header(entry, tz)}\n${entry.text}\n\n`);
    if (entry.type === 'Human') lastHuman = entry.text;
  }
  segments.push('### AI\n');
  return { text: segments.join(''), segments, messages, lastHuman };
}
