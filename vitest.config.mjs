// vitest: the widget's unit tests run in jsdom (js/test); CSS imports resolve to nothing there.
import { defineConfig } from "vitest/config";

export default defineConfig({
  test: {
    environment: "jsdom",
    include: ["js/test/**/*.test.js"],
  },
});
