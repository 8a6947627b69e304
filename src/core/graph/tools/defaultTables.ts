import type { LookupTableFileInput } from './lookupTableSchema';

/**
 * The protein table `rollout-lab init` writes to .rollout-lab/data/proteins.json:
 * a small curated set around the neurodegeneration, metabolic and oncology
 * questions that PubMedQA abstracts raise. Users replace or extend the file.
 */
export const DEFAULT_PROTEIN_TABLE = {
  kind: 'protein',
  description: 'Curated protein summaries for the protein_lookup tool. Add entries or fields freely; "name", "function" and "location" are required.',
  entries: [
    {
      name: 'amyloid-beta',
      symbol: 'APP',
      uniprot: 'P05067',
      aliases: ['Abeta', 'Aβ', 'amyloid beta', 'beta-amyloid', 'Abeta42', 'Aβ42', 'Abeta40', 'amyloid precursor protein'],
      function:
        'Peptides of 38-43 residues cut from the amyloid precursor protein by beta- and gamma-secretase; Abeta42 aggregates into soluble oligomers and extracellular plaques that are toxic to synapses.',
      location: 'Extracellular space; produced in endosomes and at the neuronal plasma membrane.',
      diseases: ["Alzheimer's disease", 'cerebral amyloid angiopathy', "Alzheimer pathology in Down syndrome"],
      drugs: ['lecanemab', 'donanemab', 'aducanumab', 'verubecestat (BACE1 inhibitor, discontinued)'],
    },
    {
      name: 'tau',
      symbol: 'MAPT',
      uniprot: 'P10636',
      aliases: ['tau protein', 'microtubule-associated protein tau', 'p-tau', 'phospho-tau'],
      function:
        'Binds and stabilises axonal microtubules; when hyperphosphorylated it detaches and aggregates into paired helical filaments and neurofibrillary tangles.',
      location: 'Neuronal axons (cytoskeleton); mislocalised to soma and dendrites in disease.',
      diseases: ["Alzheimer's disease", 'frontotemporal dementia with parkinsonism (FTDP-17)', 'progressive supranuclear palsy', 'corticobasal degeneration', 'chronic traumatic encephalopathy'],
      drugs: ['no approved tau-targeted drug', 'semorinemab (investigational antibody)', 'BIIB080 (investigational antisense oligonucleotide)', 'hydromethylthionine (investigational aggregation inhibitor)'],
    },
    {
      name: 'APOE4',
      symbol: 'APOE',
      uniprot: 'P02649',
      aliases: ['apolipoprotein E4', 'apoE4', 'APOE ε4', 'APOE e4', 'apolipoprotein E epsilon 4', 'APOE', 'apolipoprotein E'],
      function:
        'Apolipoprotein that carries cholesterol and lipids between cells; the epsilon-4 isoform clears amyloid-beta less well, promotes its aggregation and impairs lipid handling by astrocytes and microglia.',
      location: 'Secreted; made by astrocytes and microglia in the brain and by the liver.',
      diseases: ["late-onset Alzheimer's disease (strongest common genetic risk factor)", 'cardiovascular disease', 'cerebral amyloid angiopathy'],
      drugs: ['no approved APOE-targeted drug', 'carriers have a higher risk of ARIA with anti-amyloid antibodies'],
    },
    {
      name: 'TREM2',
      symbol: 'TREM2',
      uniprot: 'Q9NZC2',
      aliases: ['triggering receptor expressed on myeloid cells 2'],
      function:
        'Microglial receptor for lipids, apolipoproteins and amyloid-beta; signals through TYROBP (DAP12) to drive phagocytosis, proliferation and survival of microglia around plaques.',
      location: 'Plasma membrane of microglia and macrophages; a soluble form is shed into CSF.',
      diseases: ["Alzheimer's disease (R47H variant raises risk)", 'Nasu-Hakola disease', 'frontotemporal dementia'],
      drugs: ['AL002 (investigational agonist antibody)'],
    },
    {
      name: 'GLP-1 receptor',
      symbol: 'GLP1R',
      uniprot: 'P43220',
      aliases: ['GLP-1', 'GLP1', 'GLP-1R', 'glucagon-like peptide 1', 'glucagon-like peptide-1 receptor'],
      function:
        'G protein-coupled receptor for glucagon-like peptide 1; raises glucose-dependent insulin secretion, lowers glucagon, slows gastric emptying and reduces appetite; neuroprotective effects are under study.',
      location: 'Plasma membrane of pancreatic beta cells; also brain, heart, kidney and gut.',
      diseases: ['type 2 diabetes', 'obesity', "Parkinson's and Alzheimer's disease (trials)"],
      drugs: ['semaglutide', 'liraglutide', 'exenatide', 'dulaglutide', 'tirzepatide (dual GIP/GLP-1 agonist)'],
    },
    {
      name: 'alpha-synuclein',
      symbol: 'SNCA',
      uniprot: 'P37840',
      aliases: ['α-synuclein', 'alpha synuclein', 'a-synuclein', 'NACP'],
      function:
        'Presynaptic protein that helps assemble the SNARE complex and regulates synaptic vesicle release; misfolds into fibrils that make up Lewy bodies and spread between neurons.',
      location: 'Presynaptic terminals (cytosol, membrane-associated).',
      diseases: ["Parkinson's disease", 'dementia with Lewy bodies', 'multiple system atrophy'],
      drugs: ['prasinezumab (investigational antibody)', 'no approved disease-modifying drug'],
    },
    {
      name: 'BDNF',
      symbol: 'BDNF',
      uniprot: 'P23560',
      aliases: ['brain-derived neurotrophic factor'],
      function:
        'Neurotrophin that acts through the TrkB receptor to support neuron survival, synaptic plasticity, long-term potentiation and memory.',
      location: 'Secreted; highest in hippocampus and cortex.',
      diseases: ['major depression', "Alzheimer's disease", "Huntington's disease", 'Val66Met polymorphism linked to memory deficits'],
      drugs: ['no direct BDNF drug', 'ketamine and SSRIs raise BDNF signalling'],
    },
    {
      name: 'TNF-alpha',
      symbol: 'TNF',
      uniprot: 'P01375',
      aliases: ['TNF', 'TNFα', 'TNF-α', 'tumor necrosis factor alpha', 'tumour necrosis factor', 'cachectin'],
      function:
        'Pro-inflammatory cytokine signalling through TNFR1 and TNFR2; activates NF-kB, drives inflammation, fever and, through TNFR1, apoptosis.',
      location: 'Membrane-bound on macrophages and T cells; released as a soluble trimer.',
      diseases: ['rheumatoid arthritis', "Crohn's disease", 'ulcerative colitis', 'psoriasis', 'ankylosing spondylitis'],
      drugs: ['infliximab', 'adalimumab', 'etanercept', 'certolizumab pegol', 'golimumab'],
    },
    {
      name: 'IL-6',
      symbol: 'IL6',
      uniprot: 'P05231',
      aliases: ['interleukin 6', 'interleukin-6'],
      function:
        'Cytokine acting through IL-6R and gp130 (JAK-STAT3): acute-phase response, fever, B-cell differentiation and chronic inflammation.',
      location: 'Secreted by macrophages, T cells, endothelial cells and adipocytes.',
      diseases: ['rheumatoid arthritis', 'cytokine release syndrome', 'Castleman disease', 'giant cell arteritis', 'severe COVID-19'],
      drugs: ['tocilizumab (IL-6R)', 'sarilumab (IL-6R)', 'siltuximab (IL-6)'],
    },
    {
      name: 'insulin',
      symbol: 'INS',
      uniprot: 'P01308',
      aliases: ['insulin hormone', 'proinsulin'],
      function:
        'Peptide hormone that activates the insulin receptor to drive glucose uptake into muscle and fat, glycogen and lipid synthesis, and to suppress hepatic glucose output.',
      location: 'Secreted by beta cells of the pancreatic islets.',
      diseases: ['type 1 diabetes', 'type 2 diabetes (insulin resistance)', 'insulinoma', 'neonatal diabetes (INS mutations)'],
      drugs: ['insulin glargine', 'insulin lispro', 'insulin aspart', 'insulin degludec', 'metformin (insulin sensitiser)'],
    },
    {
      name: 'p53',
      symbol: 'TP53',
      uniprot: 'P04637',
      aliases: ['tumor protein p53', 'tumour suppressor p53', 'cellular tumor antigen p53'],
      function:
        'Transcription factor activated by DNA damage and oncogenic stress; induces cell-cycle arrest, DNA repair, senescence or apoptosis.',
      location: 'Nucleus; held in the cytoplasm and degraded via MDM2 when inactive.',
      diseases: ['Li-Fraumeni syndrome', 'mutated in about half of human cancers'],
      drugs: ['no approved p53-directed drug', 'MDM2 inhibitors such as idasanutlin (investigational)', 'eprenetapopt (investigational mutant-p53 reactivator)'],
    },
    {
      name: 'EGFR',
      symbol: 'EGFR',
      uniprot: 'P00533',
      aliases: ['epidermal growth factor receptor', 'ErbB1', 'HER1'],
      function:
        'Receptor tyrosine kinase for EGF-family ligands; drives proliferation and survival through RAS-MAPK and PI3K-AKT signalling.',
      location: 'Plasma membrane of epithelial cells.',
      diseases: ['non-small cell lung cancer (activating mutations)', 'colorectal cancer', 'glioblastoma', 'head and neck squamous cell carcinoma'],
      drugs: ['gefitinib', 'erlotinib', 'afatinib', 'osimertinib', 'cetuximab', 'panitumumab'],
    },
    {
      name: 'PCSK9',
      symbol: 'PCSK9',
      uniprot: 'Q8NBP7',
      aliases: ['proprotein convertase subtilisin/kexin type 9'],
      function: 'Secreted protease-family protein that binds the LDL receptor and routes it to lysosomes, raising plasma LDL cholesterol.',
      location: 'Secreted, mainly by hepatocytes.',
      diseases: ['familial hypercholesterolaemia (gain-of-function variants)', 'atherosclerotic cardiovascular disease'],
      drugs: ['evolocumab', 'alirocumab', 'inclisiran (siRNA)'],
    },
    {
      name: 'VEGF',
      symbol: 'VEGFA',
      uniprot: 'P15692',
      aliases: ['VEGF-A', 'vascular endothelial growth factor', 'vascular endothelial growth factor A'],
      function: 'Growth factor that drives angiogenesis and vascular permeability, mainly through VEGFR2 on endothelial cells; induced by hypoxia.',
      location: 'Secreted by hypoxic tissues, tumour cells, retinal cells and macrophages.',
      diseases: ['solid tumours (tumour angiogenesis)', 'neovascular age-related macular degeneration', 'diabetic retinopathy and macular oedema'],
      drugs: ['bevacizumab', 'ranibizumab', 'aflibercept', 'ramucirumab (VEGFR2)'],
    },
  ],
} satisfies LookupTableFileInput;

/** The gene-ontology table `rollout-lab init` writes to .rollout-lab/data/gene_ontology.json. */
export const DEFAULT_GENE_ONTOLOGY_TABLE = {
  kind: 'gene_ontology',
  description: 'A small Gene Ontology extract for the gene_ontology_lookup tool: a GO id, term name, alias or gene symbol finds the terms.',
  entries: [
    { id: 'GO:0006915', name: 'apoptotic process', namespace: 'biological_process', aliases: ['apoptosis', 'programmed cell death'], definition: 'A programmed cell death process that begins when a cell receives an internal or external signal and ends with the cell dismantled.', genes: ['TP53', 'TNF', 'BDNF'] },
    { id: 'GO:0030330', name: 'DNA damage response, signal transduction by p53 class mediator', namespace: 'biological_process', aliases: ['p53 signalling', 'p53 pathway'], definition: 'A cascade in which a p53-family protein relays the signal that DNA is damaged.', genes: ['TP53'] },
    { id: 'GO:0006954', name: 'inflammatory response', namespace: 'biological_process', aliases: ['inflammation', 'neuroinflammation'], definition: 'The immediate defensive reaction of vertebrate tissue to infection or injury.', genes: ['TNF', 'IL6', 'TREM2', 'APOE'] },
    { id: 'GO:0001774', name: 'microglial cell activation', namespace: 'biological_process', aliases: ['microglia activation', 'microglial activation'], definition: 'The change in morphology and behaviour of a microglial cell in response to a stimulus.', genes: ['TREM2', 'TNF', 'APP'] },
    { id: 'GO:0006909', name: 'phagocytosis', namespace: 'biological_process', aliases: ['engulfment'], definition: 'Uptake of particles larger than about 0.5 micrometres into a cell through membrane invagination.', genes: ['TREM2'] },
    { id: 'GO:0042982', name: 'amyloid precursor protein metabolic process', namespace: 'biological_process', aliases: ['APP processing', 'amyloid processing'], definition: 'The chemical reactions involving amyloid precursor protein, including its cleavage into amyloid-beta peptides.', genes: ['APP', 'APOE'] },
    { id: 'GO:0097242', name: 'amyloid-beta clearance', namespace: 'biological_process', aliases: ['Abeta clearance', 'amyloid clearance'], definition: 'The removal of amyloid-beta from the brain by degradation, uptake or transport.', genes: ['APOE', 'TREM2'] },
    { id: 'GO:0000226', name: 'microtubule cytoskeleton organization', namespace: 'biological_process', aliases: ['microtubule organisation'], definition: 'Assembly, arrangement and disassembly of the microtubule cytoskeleton.', genes: ['MAPT'] },
    { id: 'GO:0008017', name: 'microtubule binding', namespace: 'molecular_function', aliases: [], definition: 'Binding to a microtubule.', genes: ['MAPT'] },
    { id: 'GO:0006869', name: 'lipid transport', namespace: 'biological_process', aliases: [], definition: 'The directed movement of lipids into, out of or within a cell, or between cells.', genes: ['APOE'] },
    { id: 'GO:0042632', name: 'cholesterol homeostasis', namespace: 'biological_process', aliases: ['LDL cholesterol regulation'], definition: 'Any process that keeps the cholesterol level of a cell or organism stable.', genes: ['APOE', 'PCSK9'] },
    { id: 'GO:0008286', name: 'insulin receptor signaling pathway', namespace: 'biological_process', aliases: ['insulin signalling', 'insulin signaling'], definition: 'The series of events started by insulin binding to the insulin receptor.', genes: ['INS'] },
    { id: 'GO:0042593', name: 'glucose homeostasis', namespace: 'biological_process', aliases: ['blood glucose regulation'], definition: 'Any process that keeps the glucose level of a cell or organism stable.', genes: ['INS', 'GLP1R'] },
    { id: 'GO:0004930', name: 'G protein-coupled receptor activity', namespace: 'molecular_function', aliases: ['GPCR activity'], definition: 'Receiving an extracellular signal and transmitting it across the membrane by activating a heterotrimeric G protein.', genes: ['GLP1R'] },
    { id: 'GO:0016079', name: 'synaptic vesicle exocytosis', namespace: 'biological_process', aliases: ['neurotransmitter release'], definition: 'Fusion of synaptic vesicles with the presynaptic membrane, releasing their contents.', genes: ['SNCA'] },
    { id: 'GO:0048167', name: 'regulation of synaptic plasticity', namespace: 'biological_process', aliases: ['synaptic plasticity'], definition: 'Any process that modulates how synapses change strength with activity.', genes: ['BDNF', 'SNCA', 'APOE', 'APP'] },
    { id: 'GO:0007173', name: 'epidermal growth factor receptor signaling pathway', namespace: 'biological_process', aliases: ['EGFR signalling', 'EGFR signaling'], definition: 'The series of events started by a ligand binding to the epidermal growth factor receptor.', genes: ['EGFR'] },
    { id: 'GO:0004713', name: 'protein tyrosine kinase activity', namespace: 'molecular_function', aliases: ['tyrosine kinase activity'], definition: 'Phosphorylation of tyrosine residues of proteins.', genes: ['EGFR'] },
    { id: 'GO:0001525', name: 'angiogenesis', namespace: 'biological_process', aliases: ['blood vessel formation', 'neovascularization'], definition: 'Formation of new blood vessels from existing ones.', genes: ['VEGFA'] },
    { id: 'GO:0005125', name: 'cytokine activity', namespace: 'molecular_function', aliases: [], definition: 'The activity of a soluble extracellular signal that regulates immune and inflammatory responses.', genes: ['TNF', 'IL6'] },
    { id: 'GO:0005179', name: 'hormone activity', namespace: 'molecular_function', aliases: [], definition: 'The action of a hormone on a target cell.', genes: ['INS'] },
    { id: 'GO:0005615', name: 'extracellular space', namespace: 'cellular_component', aliases: ['secreted'], definition: 'The space outside the plasma membrane of a cell.', genes: ['APP', 'APOE', 'BDNF', 'IL6', 'INS', 'VEGFA', 'PCSK9', 'TNF'] },
    { id: 'GO:0005886', name: 'plasma membrane', namespace: 'cellular_component', aliases: ['cell membrane'], definition: 'The membrane surrounding a cell.', genes: ['EGFR', 'TREM2', 'GLP1R', 'TNF', 'APP'] },
    { id: 'GO:0005634', name: 'nucleus', namespace: 'cellular_component', aliases: ['cell nucleus'], definition: 'The membrane-bounded organelle that holds the chromosomes of a eukaryotic cell.', genes: ['TP53'] },
    { id: 'GO:0030424', name: 'axon', namespace: 'cellular_component', aliases: [], definition: 'The long process of a neuron that conducts impulses away from the cell body.', genes: ['MAPT', 'SNCA'] },
    { id: 'GO:0045202', name: 'synapse', namespace: 'cellular_component', aliases: [], definition: 'The junction through which a neuron signals to another cell.', genes: ['SNCA', 'BDNF', 'APP'] },
  ],
} satisfies LookupTableFileInput;
