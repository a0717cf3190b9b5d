"""Real-time FFT image filtering on OpenGL textures with pyfftgl.gl.TextureFFT:
`python -m demos.filter`."""
