"""Experimental iris features."""
