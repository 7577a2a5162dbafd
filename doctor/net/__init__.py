"""Bounded network probes (DNS, TCP, HTTP) and the network facts they produce: HF endpoints, Ray GCS."""
