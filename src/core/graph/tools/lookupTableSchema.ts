import { z } from 'zod';

/**
 * Format of the protein and gene-ontology tables under .rollout-lab/data/.
 * Entries are loose objects: extra fields a user adds are kept and shown to
 * the agent, only the fields the lookup relies on are checked.
 */
export const ProteinEntrySchema = z.looseObject({
  name: z.string().min(1).describe('Canonical name, e.g. amyloid-beta.'),
  symbol: z.string().min(1).optional().describe('HGNC gene symbol, e.g. APP.'),
  uniprot: z.string().min(1).optional(),
  aliases: z.array(z.string().min(1)).default([]).describe('Other names the lookup accepts (case and punctuation ignored).'),
  function: z.string().min(1),
  location: z.string().min(1),
  diseases: z.array(z.string().min(1)).default([]),
  drugs: z.array(z.string().min(1)).default([]).describe('Approved or investigational drugs acting on it.'),
});

export const GeneOntologyEntrySchema = z.looseObject({
  id: z.string().regex(/^GO:\d{7}$/, 'a GO id such as GO:0006915'),
  name: z.string().min(1),
  namespace: z.enum(['biological_process', 'molecular_function', 'cellular_component']),
  definition: z.string().min(1).optional(),
  aliases: z.array(z.string().min(1)).default([]),
  genes: z.array(z.string().min(1)).default([]).describe('Gene symbols annotated with the term; the lookup also accepts these.'),
});

export const LookupTableFileSchema = z.discriminatedUnion('kind', [
  z.strictObject({
    kind: z.literal('protein'),
    description: z.string().optional(),
    entries: z.array(ProteinEntrySchema).min(1),
  }),
  z.strictObject({
    kind: z.literal('gene_ontology'),
    description: z.string().optional(),
    entries: z.array(GeneOntologyEntrySchema).min(1),
  }),
]);

export type ProteinEntry = z.output<typeof ProteinEntrySchema>;
export type GeneOntologyEntry = z.output<typeof GeneOntologyEntrySchema>;
export type LookupTableFile = z.output<typeof LookupTableFileSchema>;
export type LookupTableFileInput = z.input<typeof LookupTableFileSchema>;
export type LookupKind = LookupTableFile['kind'];
