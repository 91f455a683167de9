import { DEFAULT_MODEL, MODEL_CONFIGS, MODEL_SUMMARIES } from '../../../../src/inference/models';
import { Field } from '../../components/ui';

export const MODELS = MODEL_CONFIGS.map((value) => ({ value, label: `${value} — ${MODEL_SUMMARIES[value]}` }));

/** The request's settings as typed (strings until the call is built). */
export interface RequestSettings {
  config: string;
  temperature: string;
  topP: string;
  maxTokens: string;
  stops: string;
  webSearch: boolean;
  stream: boolean;
  instruction: string;
}

export const DEFAULT_SETTINGS: RequestSettings = {
  config: DEFAULT_MODEL,
  temperature: '1',
  topP: '0.95',
  maxTokens: '256',
  stops: '',
  // Ticked once /portal/config.json says a search backend is configured (Playground).
  webSearch: false,
  stream: true,
  instruction: '',
};

export interface Turn {
  type: 'Human' | 'AI';
  text: string;
}

/** The inference request's JSON body: the instruction, the turns so far and the new message, with the settings. */
export function requestBody(settings: RequestSettings, turns: Turn[], message: string) {
  const { config, temperature, topP, maxTokens, stops, webSearch, instruction } = settings;
  const context = [
    ...(instruction.trim() ? [{ type: 'Instruction', text: instruction.trim() }] : []),
    ...turns,
    { type: 'Human', text: message },
  ];
  const stopTokens = stops
    .split('\n')
    .map((s) => s.replace(/\\n/g, '\n'))
    .filter((s) => s.length > 0);
  return {
    context,
    config,
    temperature: Number(temperature),
    top_p: Number(topP),
    max_tokens: Number(maxTokens),
    web_search: webSearch,
    ...(stopTokens.length ? { stop_tokens: stopTokens } : {}),
  };
}

const val = (e: Event) => (e.target as HTMLInputElement).value;

/** The settings card beside the conversation; submitting it runs the call like the Run button. */
export function SettingsCard({
  settings,
  onChange,
  demo,
  onSubmit,
}: {
  settings: RequestSettings;
  onChange: (update: (s: RequestSettings) => RequestSettings) => void;
  demo: boolean;
  onSubmit: (e: Event) => void;
}) {
  const { config, temperature, topP, maxTokens, stops, webSearch, stream, instruction } = settings;
  const set = <K extends keyof RequestSettings>(key: K, value: RequestSettings[K]) => onChange((s) => ({ ...s, [key]: value }));
  return (
    <form class="card pg-settings" onSubmit={onSubmit} aria-label="Request settings">
      <h2>Settings</h2>
      <Field
        label="Model (config)"
        hint={
          demo
            ? 'Demo model: this service runs tollgate’s built-in sample model, not a real one. Replies are sample text; tokens are billed as usual.'
            : undefined
        }
      >
        {(p) => (
          <select {...p} name="config" value={config} onChange={(e) => set('config', val(e))}>
            {MODELS.map((m) => (
              <option key={m.value} value={m.value}>
                {demo ? m.label.replace(' — ', ' (demo) — ') : m.label}
              </option>
            ))}
          </select>
        )}
      </Field>
      <div class="grid-2">
        <Field label="Temperature" hint="0 to 1">
          {(p) => (
            <input
              {...p}
              name="temperature"
              type="number"
              min="0"
              max="1"
              step="0.05"
              required
              value={temperature}
              onInput={(e) => set('temperature', val(e))}
            />
          )}
        </Field>
        <Field label="top_p" hint="0 to 1">
          {(p) => (
            <input
              {...p}
              name="top_p"
              type="number"
              min="0"
              max="1"
              step="0.05"
              required
              value={topP}
              onInput={(e) => set('topP', val(e))}
            />
          )}
        </Field>
      </div>
      <Field label="Max tokens" hint="1 to 1024">
        {(p) => (
          <input
            {...p}
            name="max_tokens"
            type="number"
            min="1"
            max="1024"
            step="1"
            required
            value={maxTokens}
            onInput={(e) => set('maxTokens', val(e))}
          />
        )}
      </Field>
      <Field label="Stop tokens" hint="One per line; write \n for a newline.">
        {(p) => <textarea {...p} name="stop_tokens" rows={2} value={stops} onInput={(e) => set('stops', val(e))} />}
      </Field>
      <div class="checkbox">
        <input id="pg-web" type="checkbox" checked={webSearch} onChange={(e) => set('webSearch', (e.target as HTMLInputElement).checked)} />
        <label for="pg-web">Web search</label>
      </div>
      <div class="checkbox">
        <input id="pg-stream" type="checkbox" checked={stream} onChange={(e) => set('stream', (e.target as HTMLInputElement).checked)} />
        <label for="pg-stream">Stream the reply</label>
      </div>
      <Field label="Instruction (optional)">
        {(p) => <textarea {...p} name="instruction" rows={2} value={instruction} onInput={(e) => set('instruction', val(e))} />}
      </Field>
    </form>
  );
}
