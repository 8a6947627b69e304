/*
 * PNG of a chart as it looks now. CSS variables and stylesheet rules do not
 * survive serialising an SVG, so the computed theme colours and fonts are
 * written onto a copy as presentation attributes (not style attributes: the
 * copy is drawn as an image, where no stylesheet applies), then the copy is
 * drawn through a blob: URL image onto a canvas (the panel's CSP allows
 * blob: and data: images).
 */

const PROPS = [
  'fill',
  'fill-opacity',
  'stroke',
  'stroke-width',
  'stroke-opacity',
  'stroke-dasharray',
  'stroke-linecap',
  'stroke-linejoin',
  'opacity',
  'font-family',
  'font-size',
  'font-weight',
  'text-anchor',
  'dominant-baseline',
  'letter-spacing',
] as const;

/** One entry of the legend drawn under the exported chart. */
export interface LegendEntry {
  text: string;
  /** A swatch before the text; none for a heading. */
  swatch: { shape: 'dot' | 'line'; colour: string; dashed: boolean } | null;
}

const SVG = 'http://www.w3.org/2000/svg';
const LEGEND_ROW = 22;

/** The legend as SVG rows under the chart (the panel's legend is HTML, which an SVG image cannot hold). */
function legendGroup(entries: readonly LegendEntry[], width: number, top: number, font: { family: string; colour: string }): { g: SVGGElement; height: number } {
  const g = document.createElementNS(SVG, 'g');
  const measure = document.createElement('canvas').getContext('2d');
  if (measure) measure.font = `12px ${font.family}`;
  let x = 12;
  let y = top + LEGEND_ROW / 2;
  for (const e of entries) {
    const textW = measure ? measure.measureText(e.text).width : e.text.length * 7;
    const w = (e.swatch ? 22 : 0) + textW + 18;
    if (x + w > width - 12 && x > 12) {
      x = 12;
      y += LEGEND_ROW;
    }
    if (e.swatch?.shape === 'dot') {
      const c = document.createElementNS(SVG, 'circle');
      c.setAttribute('cx', String(x + 5));
      c.setAttribute('cy', String(y));
      c.setAttribute('r', '4.5');
      c.setAttribute('fill', e.swatch.colour);
      g.append(c);
    } else if (e.swatch) {
      const l = document.createElementNS(SVG, 'line');
      l.setAttribute('x1', String(x));
      l.setAttribute('x2', String(x + 16));
      l.setAttribute('y1', String(y));
      l.setAttribute('y2', String(y));
      l.setAttribute('stroke', e.swatch.colour);
      l.setAttribute('stroke-width', '2.5');
      if (e.swatch.dashed) l.setAttribute('stroke-dasharray', '4 2');
      g.append(l);
    }
    const t = document.createElementNS(SVG, 'text');
    t.setAttribute('x', String(x + (e.swatch ? 22 : 0)));
    t.setAttribute('y', String(y));
    t.setAttribute('dominant-baseline', 'central');
    t.setAttribute('font-family', font.family);
    t.setAttribute('font-size', '12');
    t.setAttribute('fill', font.colour);
    t.textContent = e.text;
    g.append(t);
    x += w;
  }
  return { g, height: y + LEGEND_ROW / 2 - top + 6 };
}

/** A standalone copy of the SVG with its computed look inlined, on the editor background, with the legend under it. */
export function standaloneSvg(svg: SVGSVGElement, legend: readonly LegendEntry[] = []): { text: string; width: number; height: number } {
  const width = svg.clientWidth || Number(svg.getAttribute('width')) || 800;
  const chartHeight = svg.clientHeight || Number(svg.getAttribute('height')) || 400;
  let height = chartHeight;
  const copy = svg.cloneNode(true) as SVGSVGElement;
  const src = [svg, ...Array.from(svg.querySelectorAll('*'))];
  const dst = [copy, ...Array.from(copy.querySelectorAll('*'))];
  const drop: Element[] = [];
  src.forEach((s, i) => {
    const d = dst[i]!;
    const cs = getComputedStyle(s);
    if (cs.display === 'none' || cs.visibility === 'hidden') {
      drop.push(d);
      return;
    }
    for (const p of PROPS) {
      const v = cs.getPropertyValue(p);
      if (v) d.setAttribute(p, v);
    }
    d.removeAttribute('class');
    d.removeAttribute('tabindex');
  });
  for (const d of drop) d.remove();
  if (legend.length) {
    const body = getComputedStyle(document.body);
    const l = legendGroup(legend, width, chartHeight, { family: body.fontFamily || 'sans-serif', colour: body.color });
    copy.append(l.g);
    height += l.height;
  }
  copy.setAttribute('viewBox', `0 0 ${width} ${height}`);
  copy.setAttribute('xmlns', 'http://www.w3.org/2000/svg');
  copy.setAttribute('width', String(width));
  copy.setAttribute('height', String(height));
  const bg = document.createElementNS('http://www.w3.org/2000/svg', 'rect');
  bg.setAttribute('width', '100%');
  bg.setAttribute('height', '100%');
  bg.setAttribute('fill', getComputedStyle(document.body).backgroundColor || 'white');
  copy.insertBefore(bg, copy.firstChild);
  return { text: new XMLSerializer().serializeToString(copy), width, height };
}

/** The chart as a PNG, base64 without the data: prefix. */
export async function svgToPngBase64(svg: SVGSVGElement, legend: readonly LegendEntry[] = [], scale = 2): Promise<string> {
  const { text, width, height } = standaloneSvg(svg, legend);
  const url = URL.createObjectURL(new Blob([text], { type: 'image/svg+xml;charset=utf-8' }));
  try {
    const img = new Image();
    await new Promise<void>((resolve, reject) => {
      img.onload = () => resolve();
      img.onerror = () => reject(new Error('the chart could not be drawn as an image'));
      img.src = url;
    });
    const canvas = document.createElement('canvas');
    canvas.width = Math.round(width * scale);
    canvas.height = Math.round(height * scale);
    const ctx = canvas.getContext('2d');
    if (!ctx) throw new Error('no 2D canvas in this webview');
    ctx.scale(scale, scale);
    ctx.drawImage(img, 0, 0, width, height);
    const dataUrl = canvas.toDataURL('image/png');
    return dataUrl.slice(dataUrl.indexOf(',') + 1);
  } finally {
    URL.revokeObjectURL(url);
  }
}
