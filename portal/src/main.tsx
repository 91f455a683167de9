import { render } from 'preact';
import { App } from './app';
import { SessionProvider } from './state';
import './style.css';

render(
  <SessionProvider>
    <App />
  </SessionProvider>,
  document.getElementById('app')!,
);
