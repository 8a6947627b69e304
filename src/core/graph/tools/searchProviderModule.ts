import { z } from 'zod';
import { ConfigError, errorMessage } from '../../errors';
import { loadUserModule } from '../userModule';
import type { SearchHit, SearchProvider } from './search';

const HitsSchema = z.array(
  z.object({
    id: z.coerce.string(),
    title: z.string().default(''),
    snippet: z.string().default(''),
    score: z.number().default(0),
    source: z.string().optional(),
  }),
);

/**
 * Loads an external search provider (config `tools.searchProvider`): a TS or
 * JS module whose default export, or export `searchProvider`, is an object
 * `{ name, search(query, { topK, kind, excludeIds }) }` or a factory returning
 * one. Its results are checked, so a provider returning the wrong shape gives
 * the agent a clear tool error instead of garbage.
 */
export async function loadSearchProvider(file: string): Promise<SearchProvider> {
  const exports = await loadUserModule(file, 'search provider module');
  let value: unknown = exports.searchProvider ?? exports.default ?? exports;
  if (typeof value === 'function') value = await (value as () => unknown)();
  const p = value as Partial<SearchProvider> | null;
  if (!p || typeof p.search !== 'function') {
    throw new ConfigError(
      `search provider module ${file} must export (as default or "searchProvider") an object with search(query, { topK, kind, excludeIds }) returning [{ id, title, snippet, score }]`,
      file,
    );
  }
  const name = typeof p.name === 'string' && p.name ? p.name : file;
  const search = p.search.bind(p);
  return {
    name,
    async search(query, opts): Promise<SearchHit[]> {
      const raw = await search(query, opts);
      const parsed = HitsSchema.safeParse(raw);
      if (!parsed.success) {
        throw new Error(`search provider "${name}" returned results of the wrong shape (${errorMessage(parsed.error.issues[0]?.message)}); each hit needs id, title, snippet, score`);
      }
      return parsed.data.slice(0, opts.topK).map((h) => ({ ...h, source: h.source ?? name }));
    },
  };
}
