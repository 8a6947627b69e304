import '@vscode-elements/elements/dist/vscode-button/index.js';
import { startPanel } from '../shared/startPanel';
import { CurvesApp } from './curvesApp';

startPanel('trainingCurves', CurvesApp);
